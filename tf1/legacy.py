"""What every TF1 port shares: the ``op`` a legacy ``grad(op, *grads)`` reads, calling
such a grad, looking one up by its registered name, and refusing host code under XLA."""

from __future__ import annotations

import collections
import contextlib
from typing import Any, Callable, Hashable, Mapping, Sequence

import tensorflow as tf
from tensorflow.python.framework import ops as tf_ops
from tensorflow.python.ops import control_flow_util
from tensorflow.python.util import deprecation

from crossgrad.registry.errors import CrossgradError

PYFUNC_TYPES = ("PyFunc", "PyFuncStateless", "EagerPyFunc")


class LegacyOp:
  """What a legacy ``grad(op, *grads)`` sees where TF2 and JAX have no graph op.

  Attributes:
    name: the op's name (the ``name`` given to `py_func`, or the forward's name).
    inputs: the forward's inputs, as tensors (TF) or arrays (NumPy reference).
    outputs: the forward's outputs.
    type: the op type (``"PyFunc"`` for a py_func, ``"Sign"`` for an override of Sign).
    skip_input_indices: None, as for TF's own eager ops (no input is skipped).
  """

  skip_input_indices = None

  def __init__(self, name: str, inputs: Sequence[Any], outputs: Sequence[Any],
               op_type: str = "PyFunc", attrs: Mapping[str, Any] | None = None):
    self.name = name
    self.inputs = tuple(inputs)
    self.outputs = tuple(outputs)
    self.type = op_type
    self._attrs = dict(attrs or {})

  def get_attr(self, name: str):
    if name not in self._attrs:
      raise CrossgradError(f"the gradient reads op.get_attr({name!r}), unknown outside a "
                           "tf.compat.v1 graph", op=self.name, argument="op.get_attr",
                           expected=f"one of {sorted(self._attrs)}", actual=repr(name))
    return self._attrs[name]

  @property
  def graph(self):
    raise CrossgradError(
        "the gradient reads op.graph, which only exists in a tf.compat.v1 graph",
        op=self.name, argument="op.graph",
        hint="Pass what the gradient needs as an input of the py_func instead")

  def __repr__(self) -> str:
    return f"<crossgrad.tf1.LegacyOp {self.name!r} {self.type} ({len(self.inputs)} inputs)>"


def qualname(fn: Any) -> str:
  return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def resolve_grad(grad: Any, op: str | None = None) -> Callable[..., Any]:
  """A legacy gradient: a callable, or a name registered with `tf.RegisterGradient`
  ("Identity", "Add", or the project's own "GuidedRelu")."""
  if callable(grad):
    return grad
  if isinstance(grad, str):
    try:
      found = tf_ops._gradient_registry.lookup(grad)  # pylint: disable=protected-access
    except LookupError:
      found = None
    if found is None:
      raise CrossgradError(
          "no gradient is registered under this name", op=op, argument="grad",
          expected="a name registered with tf.RegisterGradient (e.g. 'Identity')",
          actual=repr(grad), hint="Import the module that registers it first, or pass "
                                  "the gradient function itself")
    return found
  raise CrossgradError("grad must be callable or a registered gradient name", op=op,
                       argument="grad", expected="grad(op, *grads) or a name",
                       actual=type(grad).__name__)


def call_grad(grad: Callable[..., Any], op: Any, upstream: Sequence[Any], n_inputs: int,
              op_name: str) -> list[Any]:
  """Runs a legacy ``grad(op, *upstream)``; one gradient per input, or a clear error (a
  `CrossgradError` naming the op and the gradient, also for TF's errors inside it)."""
  try:
    result = grad(op, *upstream)
  except CrossgradError:
    raise
  except (tf.errors.OpError, TypeError, ValueError, RuntimeError) as e:
    dtypes = sorted({t.dtype.name for t in (*op.inputs, *upstream) if hasattr(t, "dtype")})
    text = str(e).strip().splitlines()
    raise CrossgradError(
        f"the legacy gradient failed with {type(e).__name__}", op=op_name,
        argument=f"grad {qualname(grad)}", actual=text[0][:300] if text else "",
        hint=f"It ran on {', '.join(dtypes)} tensors; a gradient that hard-codes a dtype "
             "(tf.cast(..., 'float32')) only runs in that dtype") from e
  grads = list(result) if isinstance(result, (list, tuple)) else [result]
  if len(grads) != n_inputs:
    raise CrossgradError(
        "the legacy gradient returned the wrong number of gradients", op=op_name,
        argument=f"grad {qualname(grad)}",
        expected=f"{n_inputs} (one per input of the op)", actual=len(grads),
        hint="Return one gradient per input (None where an input has none)")
  return grads


# Traced legacy gradients, most recently used last: (grad, what else decides its code) ->
# tf.function. Bounded, since a gradient made anew per call (a closure) is a new key.
_TRACED: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()
_MAX_TRACED = 256


def _graph_code(key: Hashable, build: Callable[..., Any]) -> Callable[..., Any]:
  """``build`` traced into a `tf.function` (once per input signature, cached under ``key``)."""
  traced = _TRACED.pop(key, None) or tf.function(build, autograph=False)
  _TRACED[key] = traced
  while len(_TRACED) > _MAX_TRACED:
    _TRACED.popitem(last=False)
  return traced


def call_grad_in_graph(grad: Callable[..., Any], make_op: Callable[..., Any],
                       inputs: Sequence[Any], outputs: Sequence[Any], upstream: Sequence[Any],
                       op_name: str, key: Hashable = ()) -> list[Any]:
  """`call_grad` with TF1 semantics: the gradient is graph code, so eagerly it runs as a
  traced graph, where `tf.gradients`, v1 ``py_func`` with ``Tout``, static shapes and
  ``op.inputs`` / ``op.outputs`` behave as in TF1; while a graph is being built, it is
  called as is, and under XLA refused (`CrossgradError`) if it calls py_func.
  ``make_op(inputs, outputs)`` is the ``op`` it reads; ``key`` is what, besides ``grad``
  and ``op_name``, decides ``make_op``."""
  n, m = len(inputs), len(outputs)

  def build(*flat):
    return call_grad(grad, make_op(flat[:n], flat[n:n + m]), flat[n + m:], n, op_name)

  flat = (*inputs, *outputs, *upstream)
  if not tf.executing_eagerly():
    return host_free_under_xla(op_name, f"the gradient {qualname(grad)}", build, *flat)
  return _graph_code((grad, op_name, n, m, key), build)(*flat)


def dense(values: Any) -> Any:
  """``values`` (a tensor, or a sequence of tensors and None, as a list) with each
  `tf.IndexedSlices` (`tf.gather`'s gradient) as a dense tensor."""
  if isinstance(values, (list, tuple)):
    return [dense(v) for v in values]
  return tf.convert_to_tensor(values) if isinstance(values, tf.IndexedSlices) else values


def in_xla() -> bool:
  """True while TensorFlow builds a graph that XLA compiles (`jit_compile=True`)."""
  if tf.executing_eagerly():
    return False
  return control_flow_util.GraphOrParentsInXlaContext(tf_ops.get_default_graph())


_XLA = "cannot run under XLA (tf.function(jit_compile=True))"


def refuse_under_xla(op: str, reason: str, hint: str):
  """A `CrossgradError` instead of XLA's "No registered 'PyFuncStateless' OpKernel"."""
  if in_xla():
    raise CrossgradError(f"{_XLA}: {reason}", op=op, backend="tensorflow",
                         argument="jit_compile", hint=hint)


@contextlib.contextmanager
def quiet():
  """Silences TensorFlow's deprecation notices for the TF1 APIs crossgrad calls itself
  (`deprecation.silence` would leave them off after an exception)."""
  saved = deprecation._PRINT_DEPRECATION_WARNINGS  # pylint: disable=protected-access
  deprecation._PRINT_DEPRECATION_WARNINGS = False  # pylint: disable=protected-access
  try:
    yield
  finally:
    deprecation._PRINT_DEPRECATION_WARNINGS = saved  # pylint: disable=protected-access


def host_free_under_xla(op: str, what: str, fn: Callable[..., Any], *args: Any):
  """``fn(*args)``; under XLA, a `CrossgradError` naming ``op`` if it makes a py_func."""
  if not in_xla():
    return fn(*args)
  graph = tf_ops.get_default_graph()
  before = len(graph.get_operations())
  try:
    result = fn(*args)
  except CrossgradError as e:  # A drop-in py_func inside refused first: name the op.
    if not e.problem.startswith(_XLA):
      raise
    host = [f"py_func {e.op!r}"]
  else:
    host = sorted({o.type for o in graph.get_operations()[before:] if o.type in PYFUNC_TYPES})
  if host:
    raise CrossgradError(f"{_XLA}: {what} calls {', '.join(host)}, NumPy code on the host",
                         op=op, backend="tensorflow", argument="jit_compile",
                         hint="Write it with TF ops, or leave jit_compile off for this "
                              "function")
  return result
