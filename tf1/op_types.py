"""The TF op types whose gradient `override_map` replaces and `port` turns into native ops.

Each entry names the op type's inputs, its forward written in ``xp`` (so a port runs
natively in every backend, XLA and `jax.jit` included) and the TensorFlow functions
that create it (which `override_map` wraps while it is active).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from crossgrad.registry.errors import CrossgradError


@dataclasses.dataclass(frozen=True)
class OpType:
  """One overridable op type.

  Attributes:
    name: the TF op type, as in ``gradient_override_map({name: ...})``.
    inputs: names of its tensor inputs.
    forward: ``forward(xp, *inputs, **params)``, the op in ``xp``.
    creators: ``(module, function)`` pairs of the TF functions that create this op type.
    tf_types: the TF op types the name stands for (``"Add"``: also TF2's ``AddV2``).
    params: static parameters of the port, with defaults.
    doc: one line for the docs table.
  """

  name: str
  inputs: tuple[str, ...]
  forward: Callable[..., Any]
  creators: tuple[tuple[str, str], ...]
  doc: str
  tf_types: tuple[str, ...] = ()
  params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

  @property
  def all_tf_types(self) -> tuple[str, ...]:
    return (self.name,) + self.tf_types


def xp_dtype(xp: Any, name: str) -> Any:
  """The namespace's dtype object where it has them (the Array API form), else the name."""
  return getattr(xp, name) if name in dir(xp) else name


def _cast(xp, x, *, dtype="float32"):
  return xp.astype(x, xp_dtype(xp, dtype))


_MATH, _NN, _ARRAY = ("tensorflow.python.ops.gen_math_ops", "tensorflow.python.ops.gen_nn_ops",
                      "tensorflow.python.ops.gen_array_ops")

OP_TYPES: dict[str, OpType] = {t.name: t for t in (
    OpType("Sign", ("x",), lambda xp, x: xp.sign(x), ((_MATH, "sign"),), "sign(x)"),
    OpType("Round", ("x",), lambda xp, x: xp.round(x), ((_MATH, "round"),),
           "round(x), half to even"),
    OpType("Floor", ("x",), lambda xp, x: xp.floor(x), ((_MATH, "floor"),), "floor(x)"),
    OpType("Ceil", ("x",), lambda xp, x: xp.ceil(x), ((_MATH, "ceil"),), "ceil(x)"),
    OpType("Relu", ("x",), lambda xp, x: xp.maximum(x, xp.zeros_like(x)),
           ((_NN, "relu"),), "max(x, 0) (tf.nn.relu)"),
    OpType("Identity", ("x",), lambda xp, x: x, ((_ARRAY, "identity"),), "x (tf.identity)"),
    # array_ops' wrapper stops the tape around the op, so it is the one to wrap.
    OpType("StopGradient", ("x",), lambda xp, x: x,
           (("tensorflow.python.ops.array_ops", "stop_gradient"),), "x (tf.stop_gradient)"),
    OpType("Cast", ("x",), _cast, ((_MATH, "cast"),),
           "x as `dtype` (tf.cast; static parameter dtype, default float32)",
           params={"dtype": "float32"}),
    OpType("Mul", ("x", "y"), lambda xp, x, y: x * y, ((_MATH, "mul"),), "x * y"),
    OpType("Add", ("x", "y"), lambda xp, x, y: x + y, ((_MATH, "add"),),
           "x + y (also TF2's AddV2, which tf.add and + make)", tf_types=("AddV2",)),
    OpType("AddV2", ("x", "y"), lambda xp, x, y: x + y, ((_MATH, "add_v2"),), "x + y"),
    OpType("Maximum", ("x", "y"), lambda xp, x, y: xp.maximum(x, y), ((_MATH, "maximum"),),
           "max(x, y)"),
    OpType("Minimum", ("x", "y"), lambda xp, x, y: xp.minimum(x, y), ((_MATH, "minimum"),),
           "min(x, y)"),
)}


def get(name: str) -> OpType:
  """The entry for ``name``, or a `CrossgradError` listing the supported op types."""
  if name in OP_TYPES:
    return OP_TYPES[name]
  hint = ("Use crossgrad.tf1.py_func in place of the random-name py_func helper"
          if name in ("PyFunc", "PyFuncStateless", "EagerPyFunc") else
          "Open an issue for another op type, or write the op as a crossgrad OpDef")
  raise CrossgradError("op type has no crossgrad override", argument=f"op type {name!r}",
                       expected=f"one of {sorted(OP_TYPES)}", actual=repr(name), hint=hint)
