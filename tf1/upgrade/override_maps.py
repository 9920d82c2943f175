"""``graph.gradient_override_map({"Sign": "Identity"})`` of built-in op types becomes
``crossgrad.tf1.override_map({...})``, which applies in TF2 eager code, under
`tf.function` and XLA, and in `tf.compat.v1` graphs (``import_graph_def`` included). The
map stays as written: its values may be names registered with `tf.RegisterGradient`."""

from __future__ import annotations

import libcst as cst

from crossgrad.tf1.op_types import OP_TYPES
from crossgrad.tf1.upgrade import names
from crossgrad.tf1.upgrade import py_funcs


def is_override(call: cst.Call) -> bool:
  return names.last_name(call) == "gradient_override_map" and len(call.args) == 1


def rewrite(call: cst.Call, alias: str) -> tuple[cst.Call | None, str]:
  """(the TF2 call, what changed), or (None, why it stays) for a map this does not own."""
  items = names.dict_items(call.args[0].value)
  if items is None:
    return None, ("the map is computed at run time, so its op types are unknown here: where "
                  "they are all in crossgrad.tf1.OP_TYPES, call crossgrad.tf1.override_map("
                  "mapping) in its place")
  keys = [k for k, _ in items]
  if set(keys) & py_funcs.PYFUNC_TYPES:
    return None, ""  # The py_func idiom: py_funcs rewrites it, or reports why not.
  unknown = sorted(set(keys) - set(OP_TYPES))
  if unknown:
    return None, (f"op types {', '.join(unknown)} have no TF2 override in crossgrad.tf1 "
                  f"(OP_TYPES: {', '.join(sorted(OP_TYPES))}): write a tf.custom_gradient "
                  "or a crossgrad op for them")
  return (call.with_changes(func=names.tf1_attr(alias, "override_map")),
          "-> crossgrad.tf1.override_map({" + ", ".join(f"{k!r}: ..." for k in keys) + "})")
