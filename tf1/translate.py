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

from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context
from tensorflow.python.eager import execute

from crossgrad.backends.jax import array_object as jax_array_object
from crossgrad.registry.errors import CrossgradError
from crossgrad.tf1 import legacy
from crossgrad.tf1.handlers import HANDLERS
from crossgrad.tf1.handlers import SHAPE_OPS


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
    elif op.type in SHAPE_OPS and all(t.shape.is_fully_defined() for t in op.inputs):
      out = HANDLERS[op.type](np, op, *[np.zeros(t.shape) for t in op.inputs])
      self._store(op, out if isinstance(out, list) else [out])
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
    plain = jax_array_object.plain_namespace(xp)
    if plain is not xp:  # A JAX body's: the handlers are JAX code on plain arrays.
      return jax_array_object.wrap(self._replay(plain, *jax_array_object.unwrap(args)))
    return self._replay(xp, *args)

  def _replay(self, xp: Any, *args: Any) -> list[Any]:
    values = dict(self._static)
    values.update(zip(self._inputs, args))
    for op in self._ops:
      if op.outputs and op.outputs[0].ref() in values:
        continue
      out = HANDLERS[op.type](xp, op, *[values[t.ref()] for t in op.inputs])
      for t, v in zip(op.outputs, out if isinstance(out, list) else [out]):
        values[t.ref()] = v
    return [values[t.ref()] for t in self._outputs]
