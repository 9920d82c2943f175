"""Drop-ins for TF1 code: the seeds' ``py_func(func, inp, Tout, ..., grad=grad)`` helper
and ``Defun(..., python_grad_func=grad)``, running the legacy gradient unchanged in TF2
eager, under `tf.function` and in a `tf.compat.v1` graph; and `legacy_vjp`, the TF1 oracle.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from crossgrad.registry.errors import CrossgradError
from crossgrad.tf1 import legacy

# One gradient function, registered once under a fixed name, serves every graph: it finds
# the legacy grad by the PyFunc's `token` attribute, which `import_graph_def` keeps. An
# entry lives as long as the graph that made it (which also keeps the NumPy forward alive).
_OVERRIDE_NAME = "CrossgradLegacyPyFuncGrad"
_GRADS: dict[bytes, tuple[Callable[..., Any], str]] = {}

_XLA_HINT = ("Port it (crossgrad.tf1.port) with a TF or op-type forward, or leave "
             "jit_compile off for this function")


def _zeros_for_none(upstream, outputs):
  return [tf.zeros_like(o) if u is None else u for u, o in zip(upstream, outputs)]


def _dispatch_graph_grad(op, *upstream):
  entry = _GRADS.get(op.get_attr("token"))
  if entry is None:
    raise CrossgradError(
        "the legacy gradient of this py_func is not known in this process", op=op.name,
        argument="grad", hint="Build the graph with crossgrad.tf1.py_func in this process (a graph loaded "
             "from disk has lost its NumPy functions too)")
  grad, op_name = entry
  return legacy.call_grad(grad, op, _zeros_for_none(upstream, op.outputs), len(op.inputs),
                          op_name)


try:
  tf.RegisterGradient(_OVERRIDE_NAME)(_dispatch_graph_grad)
except KeyError:  # This module was loaded again; the first registration stays.
  pass


def _graph_py_func(graph, func, inp, Tout, stateful, name, grad):
  """The TF1 path, in a `tf.compat.v1` graph: a real PyFunc with a real override."""
  overrides = {"PyFunc": _OVERRIDE_NAME, "PyFuncStateless": _OVERRIDE_NAME}
  with graph.gradient_override_map(overrides), legacy.quiet():
    out = tf.compat.v1.py_func(func, inp, Tout, stateful=stateful, name=name)
  token = (out[0] if isinstance(out, (list, tuple)) else out).op.get_attr("token")
  _GRADS[token] = (grad, name or legacy.qualname(func))
  weakref.finalize(graph, _GRADS.pop, token, None)
  return out


def numpy_function(func, inp, Tout, stateful, name) -> list[Any]:
  """`tf.numpy_function`'s outputs as a list; a `CrossgradError` under XLA."""
  legacy.refuse_under_xla(name or legacy.qualname(func), "the forward is NumPy code run "
                          "on the host (tf.numpy_function)", _XLA_HINT)
  out = tf.numpy_function(func, list(inp), Tout, stateful=stateful, name=name)
  return list(out) if isinstance(out, (list, tuple)) else [out]


def _tf2_py_func(func, inp, Tout, stateful, name, grad):
  """The TF2 path (eager and `tf.function`): `tf.numpy_function` in `tf.custom_gradient`."""
  op_name = name or legacy.qualname(func)
  single = not isinstance(Tout, (list, tuple))

  @tf.custom_gradient
  def core(*inputs):
    outputs = numpy_function(func, inputs, Tout, stateful, name)

    def backward(*upstream):
      return legacy.call_grad_in_graph(grad, lambda i, o: legacy.LegacyOp(op_name, i, o),
                                       inputs, outputs, _zeros_for_none(upstream, outputs),
                                       op_name)

    return (outputs[0] if single else outputs), backward

  return core(*[tf.convert_to_tensor(x) for x in inp])


def py_func(func: Callable[..., Any], inp: Sequence[Any], Tout: Any, stateful: bool = True,
            name: str | None = None, grad: Callable[..., Any] | None = None):
  """Drop-in for the seeds' ``py_func(func, inp, Tout, stateful, name, grad)`` helper.

  ``func`` is the NumPy forward; ``grad(op, *grads)`` the legacy TF gradient, reading
  ``op.inputs`` / ``op.outputs`` and returning one gradient per input. In a
  `tf.compat.v1` graph this builds a real PyFunc op under `gradient_override_map`
  (one fixed registration, no random names; the graph survives `import_graph_def`);
  in TF2 eager and under `tf.function` it is `tf.numpy_function` inside
  `tf.custom_gradient`. Without ``grad`` it is plain `tf.compat.v1.py_func` /
  `tf.numpy_function`, which have no gradient. Outputs have unknown static shapes, as
  with `tf.py_func`: call ``set_shape`` on them where Keras needs shapes. Under XLA it
  raises a `CrossgradError` (NumPy runs on the host).
  """
  if grad is not None and not callable(grad):
    raise CrossgradError("grad must be callable", op=name, argument="grad",
                         expected="grad(op, *grads)", actual=type(grad).__name__)
  if not tf.executing_eagerly() and not tf.inside_function():
    graph = tf.compat.v1.get_default_graph()
    if grad is None:
      with legacy.quiet():
        return tf.compat.v1.py_func(func, inp, Tout, stateful=stateful, name=name)
    return _graph_py_func(graph, func, inp, Tout, stateful, name, grad)
  if grad is None:
    out = numpy_function(func, inp, Tout, stateful, name)
    return out if isinstance(Tout, (list, tuple)) else out[0]
  return _tf2_py_func(func, inp, Tout, stateful, name, grad)


def Defun(*input_types: Any,  # pylint: disable=invalid-name
          python_grad_func: Callable[..., Any] | None = None, func_name: str | None = None):
  """Drop-in for ``tensorflow.python.framework.function.Defun``.

  TF1's Defun only works in a `tf.compat.v1` graph: TF2 eager fails and
  `tf.GradientTape` ignores ``python_grad_func``. This decorator runs the TF forward
  with ``python_grad_func(op, *grads)`` as its gradient in eager mode, under
  `tf.function` (XLA included) and in `tf.compat.v1` graphs. Inputs are converted to
  ``input_types``.
  """
  def decorate(forward: Callable[..., Any]):
    name = func_name or legacy.qualname(forward)

    @functools.wraps(forward)
    def call(*args):
      tensors = [tf.convert_to_tensor(x, dtype=t) for x, t in zip(args, input_types)]
      if python_grad_func is None:
        return forward(*tensors)

      @tf.custom_gradient
      def core(*inputs):
        outputs = forward(*inputs)
        listed = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]

        def backward(*upstream):
          return legacy.call_grad_in_graph(
              python_grad_func, lambda i, o: legacy.LegacyOp(name, i, o, op_type=name),
              inputs, listed, _zeros_for_none(upstream, listed), name)

        return outputs, backward

      return core(*tensors)

    call.python_grad_func = python_grad_func
    call.forward = forward
    return call

  return decorate


def legacy_vjp(func: Callable[..., Any], grad: Callable[..., Any], inputs: Sequence[Any],
               cotangents: Sequence[Any], Tout: Sequence[Any] | None = None,
               name: str = "legacy") -> tuple[list[np.ndarray], list[np.ndarray | None]]:
  """The TF1 oracle: a real PyFunc with ``grad`` in a fresh `tf.compat.v1` graph.

  Runs ``py_func(func, inputs, Tout, grad=grad)`` under `gradient_override_map` and
  `tf.gradients` with ``cotangents`` as ``grad_ys`` in a `tf.compat.v1.Session`.

  Returns:
    (outputs, input gradients) as NumPy arrays; a gradient is None where TF1 gives none.
  """
  inputs = [np.asarray(x) for x in inputs]
  if Tout is None:
    Tout = [inputs[0].dtype] * len(cotangents)
  graph = tf.Graph()
  with graph.as_default():
    xs = [tf.compat.v1.placeholder(x.dtype, x.shape) for x in inputs]
    gs = [tf.compat.v1.placeholder(np.asarray(c).dtype, np.shape(c)) for c in cotangents]
    outputs = py_func(func, xs, list(Tout), stateful=False, name=name, grad=grad)
    grads = tf.gradients(outputs, xs, grad_ys=gs)
    fetch = [g for g in grads if g is not None]
    feed = dict(zip(xs + gs, inputs + [np.asarray(c) for c in cotangents]))
    with tf.compat.v1.Session(graph=graph) as session:
      out_values, grad_values = session.run((outputs, fetch), feed)
  it = iter(grad_values)
  return list(out_values), [None if g is None else next(it) for g in grads]
