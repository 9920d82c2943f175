"""``function.Defun(tf.float32, python_grad_func=grad)`` becomes ``crossgrad.tf1.Defun``,
which runs in TF2 eager code and under `tf.function` (TF1's Defun only runs in a
`tf.compat.v1` graph, and `tf.GradientTape` ignores its python_grad_func)."""

from __future__ import annotations

import libcst as cst

from crossgrad.tf1.upgrade import names

_SUPPORTED = frozenset({"python_grad_func", "func_name"})


def is_defun(call: cst.Call) -> bool:
  return names.last_name(call) == "Defun" and names.keyword(call, "python_grad_func") is not None


def rewrite(call: cst.Call, alias: str) -> tuple[cst.Call | None, str]:
  """(the TF2 call, what changed), or (None, why it stays; '' when already migrated)."""
  if names.dotted(call.func) == f"{alias}.Defun":
    return None, ""
  other = sorted({a.keyword.value for a in call.args if a.keyword is not None} - _SUPPORTED)
  if other or any(a.star for a in call.args):
    return None, (f"Defun arguments crossgrad.tf1.Defun does not take ({', '.join(other) or '*'}"
                  "): keep the TF1 Defun in a tf.compat.v1 graph, or port it by hand")
  return (call.with_changes(func=names.tf1_attr(alias, "Defun")),
          "-> crossgrad.tf1.Defun (runs eagerly and under tf.function)")
