"""TensorFlow code as ``xp`` code: a traced TF function (a legacy gradient, a Defun's
forward) replayed op by op with the namespace, so its JAX twin is native (`jax.jit`,
`vmap`, second derivatives) with no host callback.

Values that do not depend on the inputs (constants, shapes, `BroadcastGradientArgs`)
are computed once, by TensorFlow itself, when the function is translated; the rest runs
through `HANDLERS`. A function that applies an op without a handler to its inputs, makes
a random or stateful op or a py_func, or reads a variable is not translatable:
`Program.missing` says why.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context
from tensorflow.python.eager import execute

from crossgrad.registry.errors import CrossgradError
from crossgrad.tf1 import legacy


def _fn(ns, *names):
  """The first of ``names`` the namespace has (Array API name first, the older one next)."""
  return getattr(ns, next(n for n in names if n in dir(ns)))


def _axes(value) -> tuple[int, ...]:
  return tuple(int(a) for a in np.atleast_1d(value))


def _reduction(name):
  return lambda ns, op, x, axes: getattr(ns, name)(x, axis=_axes(axes),
                                                   keepdims=op.get_attr("keep_dims"))


def _unary(name):
  return lambda ns, op, x: getattr(ns, name)(x)


def _binary(fn):
  return lambda ns, op, a, b: fn(ns, a, b)


def _select(ns, op, cond, a, b):
  if op.type == "Select" and np.ndim(cond) == 1 and np.ndim(a) > 1:  # TF1's row select.
    cond = ns.reshape(cond, (-1,) + (1,) * (np.ndim(a) - 1))
  return ns.where(cond, a, b)


def _squeeze(ns, op, x):
  axes = [a % np.ndim(x) for a in op.get_attr("squeeze_dims")] or [
      i for i, d in enumerate(np.shape(x)) if d == 1]
  return ns.reshape(x, tuple(d for i, d in enumerate(np.shape(x)) if i not in axes))


def _matmul(ns, op, a, b):
  swap = _fn(ns, "matrix_transpose", "transpose")
  a = swap(a) if op.get_attr("transpose_a") else a
  b = swap(b) if op.get_attr("transpose_b") else b
  return ns.matmul(a, b)


def _concat(ns, op, *values):
  *arrays, axis = values
  return _fn(ns, "concat", "concatenate")(list(arrays), axis=int(axis))


def _pack(ns, op, *values):
  axis = op.get_attr("axis") % (np.ndim(values[0]) + 1)
  return _fn(ns, "concat", "concatenate")([ns.expand_dims(v, axis) for v in values], axis=axis)


def _shape_of(kind):
  def shape(ns, op, x):
    dtype = op.get_attr("out_type").as_numpy_dtype
    value = {"Shape": np.shape(x), "Size": np.size(x), "Rank": np.ndim(x)}[kind]
    return np.asarray(value, dtype)
  return shape


HANDLERS: dict[str, Callable[..., Any]] = {
    **{t: lambda ns, op, *xs: list(xs) if op.type == "IdentityN" else xs[0] for t in (
        "Identity", "IdentityN", "StopGradient", "PreventGradient", "Snapshot",
        "EnsureShape")},
    **{t: _unary(n) for t, n in {
        "Neg": "negative", "Abs": "abs", "Sign": "sign", "Exp": "exp", "Log": "log",
        "Sqrt": "sqrt", "Square": "square", "Tanh": "tanh", "Floor": "floor",
        "Ceil": "ceil", "Round": "round", "LogicalNot": "logical_not",
        "ZerosLike": "zeros_like", "OnesLike": "ones_like"}.items()},
    **{t: _binary(lambda ns, a, b, n=n: getattr(ns, n)(a, b)) for t, n in {
        "Maximum": "maximum", "Minimum": "minimum", "Less": "less",
        "LessEqual": "less_equal", "Greater": "greater", "GreaterEqual": "greater_equal",
        "Equal": "equal", "LogicalAnd": "logical_and", "LogicalOr": "logical_or"}.items()},
    **{t: _binary(lambda ns, a, b, f=f: f(a, b)) for t, f in {
        "Add": operator.add, "AddV2": operator.add, "Sub": operator.sub,
        "Mul": operator.mul, "RealDiv": operator.truediv, "Div": operator.truediv,
        "Pow": operator.pow}.items()},
    "NotEqual": _binary(lambda ns, a, b: ns.logical_not(ns.equal(a, b))),
    "SquaredDifference": _binary(lambda ns, a, b: ns.square(a - b)),
    "Relu": lambda ns, op, x: ns.maximum(x, ns.zeros_like(x)),
    "ReluGrad": lambda ns, op, g, f: ns.where(f > 0, g, ns.zeros_like(g)),
    "Sigmoid": lambda ns, op, x: ns.ones_like(x) / (1 + ns.exp(-x)),
    "SigmoidGrad": lambda ns, op, y, dy: dy * y * (1 - y),
    "TanhGrad": lambda ns, op, y, dy: dy * (1 - y * y),
    "Reciprocal": lambda ns, op, x: ns.ones_like(x) / x,
    "Inv": lambda ns, op, x: ns.ones_like(x) / x,
    "Rsqrt": lambda ns, op, x: ns.ones_like(x) / ns.sqrt(x),
    "ClipByValue": lambda ns, op, x, lo, hi: ns.minimum(ns.maximum(x, lo), hi),
    "Select": _select, "SelectV2": _select,
    "Fill": lambda ns, op, dims, value: ns.broadcast_to(value, tuple(int(d) for d in dims)),
    "Cast": lambda ns, op, x: ns.astype(x, np.dtype(op.get_attr("DstT").as_numpy_dtype)),
    "Reshape": lambda ns, op, x, shape: ns.reshape(x, tuple(int(d) for d in shape)),
    "ExpandDims": lambda ns, op, x, axis: ns.expand_dims(x, int(axis)),
    "Squeeze": _squeeze,
    "Transpose": lambda ns, op, x, perm: _fn(ns, "permute_dims", "transpose")(
        x, tuple(int(p) for p in perm)),
    "BroadcastTo": lambda ns, op, x, shape: ns.broadcast_to(x, tuple(int(d) for d in shape)),
    "Sum": _reduction("sum"), "Mean": _reduction("mean"), "Max": _reduction("max"),
    "Min": _reduction("min"),
    "AddN": lambda ns, op, *xs: sum(xs[1:], xs[0]),
    "MatMul": _matmul, "ConcatV2": _concat, "Pack": _pack,
    "UnsortedSegmentSum": lambda ns, op, data, ids, n: ns.segment_sum(data, ids, int(n)),
    "GatherV2": lambda ns, op, x, ids, axis: ns.take(x, ids, axis=int(axis)),
    "Shape": _shape_of("Shape"), "Size": _shape_of("Size"), "Rank": _shape_of("Rank"),
}
# Ops whose output depends only on the input's static shape, never on its values.
_SHAPE_OPS = ("Shape", "Size", "Rank")


def _fold(op: tf.Operation, values: Sequence[np.ndarray]) -> list[np.ndarray] | None:
  """``op`` itself run eagerly on constant inputs, with its own attributes (constant folding
  by TensorFlow: no Python argument names to map, each input in its graph dtype); None
  where TF cannot run it eagerly (function-valued attributes, ...)."""
  attrs = []
  for name in op.node_def.attr:
    if not name.startswith("_"):
      attrs += [name, op.get_attr(name)]
  try:
    with tf.device("/cpu:0"):
      inputs = [tf.constant(v, dtype=t.dtype) for v, t in zip(values, op.inputs)]
      out = execute.execute(op.type, len(op.outputs), inputs, tuple(attrs),
                            context.context())
  except (tf.errors.OpError, TypeError, ValueError):
    return None
  return [np.asarray(o) for o in out]


class Program:
  """A traced TF function replayed with ``xp``.

  Attributes:
    missing: why the function cannot be translated (TF op types without a handler,
      random or stateful ops, py_funcs, captured variables); empty where it can.
    has_py_func: whether the function calls NumPy on the host (a py_func op).
  """

  def __init__(self, fn: Callable[..., Any], specs: Sequence[tf.TensorSpec]):
    concrete = tf.function(lambda *a: legacy.dense(fn(*a)), autograph=False
                           ).get_concrete_function(*specs)
    self.name = getattr(fn, "__name__", repr(fn))
    graph = concrete.graph
    self._inputs = [t.ref() for t in graph.inputs[:len(specs)]]
    self._outputs = list(concrete.outputs)
    self.has_py_func = False
    self.missing: list[str] = []
    self._static: dict[Any, np.ndarray] = {}
    for external, internal in graph.captures:
      if external.dtype == tf.resource or not hasattr(external, "numpy"):
        self.missing.append(f"reads {internal.name} (a tf.Variable or outer tensor)")
      else:
        self._static[internal.ref()] = external.numpy()
    self._ops = self._needed_ops()
    for op in self._ops:
      self._classify(op)

  def _needed_ops(self) -> list[tf.Operation]:
    """The ops the outputs depend on, in graph (topological) order."""
    needed, stack = set(), [t.op for t in self._outputs]
    while stack:
      op = stack.pop()
      if op not in needed:
        needed.add(op)
        stack.extend(t.op for t in op.inputs)
    graph = self._outputs[0].graph if self._outputs else None
    return [op for op in graph.get_operations() if op in needed] if graph else []

  def _classify(self, op: tf.Operation):
    """Folds ``op`` now if its inputs are known; else records whether it can be replayed."""
    if op.type == "Placeholder" or op.outputs[0].ref() in self._static:
      return
    if op.type in legacy.PYFUNC_TYPES:
      self.has_py_func = True
      self.missing.append(f"TF op {op.type} ({op.name}) runs NumPy on the host")
    elif op.type == "Const":
      self._store(op, [tf.make_ndarray(op.get_attr("value"))])
    elif op.type in _SHAPE_OPS and op.inputs[0].shape.is_fully_defined():
      self._store(op, [HANDLERS[op.type](np, op, np.zeros(op.inputs[0].shape))])
    elif op.op_def.is_stateful:
      self.missing.append(f"TF op {op.type} ({op.name}) is random or stateful")
    elif all(t.ref() in self._static for t in op.inputs) and self._fold(op):
      return
    elif op.type not in HANDLERS:
      self.missing.append(f"TF op {op.type} ({op.name}) has no xp translation")

  def _fold(self, op) -> bool:
    values = _fold(op, [self._static[t.ref()] for t in op.inputs])
    if values is not None:
      self._store(op, values)
    return values is not None

  def _store(self, op, values):
    for t, v in zip(op.outputs, values):
      self._static[t.ref()] = v

  def __call__(self, xp: Any, *args: Any) -> list[Any]:
    if self.missing:
      raise CrossgradError("TF code cannot run as xp code", op=self.name,
                           backend=xp.backend, argument="grad", actual="; ".join(self.missing))
    values = dict(self._static)
    values.update(zip(self._inputs, args))
    for op in self._ops:
      if op.outputs and op.outputs[0].ref() in values:
        continue
      out = HANDLERS[op.type](xp, op, *[values[t.ref()] for t in op.inputs])
      for t, v in zip(op.outputs, out if isinstance(out, list) else [out]):
        values[t.ref()] = v
    return [values[t.ref()] for t in self._outputs]
