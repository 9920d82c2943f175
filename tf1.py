r"""TF1 gradient overrides (``tf.py_func`` + ``gradient_override_map``) in TF2 and JAX.

Thousands of repositories carry the seeds' idiom::

  rnd_name = 'PyFuncGrad' + str(np.random.randint(0, 1E+8))
  tf.RegisterGradient(rnd_name)(grad)
  with graph.gradient_override_map({"PyFunc": rnd_name}):
    return tf.py_func(func, inp, Tout, stateful=stateful, name=name)

`py_func` is a drop-in for that helper that runs the legacy ``grad(op, *grads)``
unchanged in TF2 eager, under `tf.function` and in a `tf.compat.v1` graph. `port`
turns a legacy (NumPy forward, TF grad) pair into a registry `OpDef`, so it also gets
a JAX version and the cross-check. Importing this module imports TensorFlow.
"""

from __future__ import annotations

import functools
import inspect
import types
import weakref
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from crossgrad.registry import op_registry
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef
from crossgrad.registry.opdef import _function_key

PYFUNC_TYPES = ("PyFunc", "PyFuncStateless", "EagerPyFunc")
JAX_BACKWARDS = ("auto", "call_tf", "callback")
# Names a gradient uses to read TF1 graph state, which TF2 and JAX do not have.
GRAPH_STATE_NAMES = frozenset({
    "get_collection", "get_collection_ref", "add_to_collection", "GraphKeys",
    "get_default_graph"})

# One gradient function, registered once under a fixed name, serves every graph:
# it looks the legacy grad up in a per-graph table that dies with its graph.
_OVERRIDE_NAME = "CrossgradLegacyPyFuncGrad"
_GRAPH_GRADS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class LegacyOp:
  """What a legacy ``grad(op, *grads)`` sees outside a TF1 graph.

  Attributes:
    name: the op's name (the ``name`` given to `py_func`, or the forward's name).
    inputs: the forward's inputs, as tensors (TF) or arrays (JAX, NumPy reference).
    outputs: the forward's outputs.
    type: ``"PyFunc"``, as in TF1.
  """

  def __init__(self, name: str, inputs: Sequence[Any], outputs: Sequence[Any]):
    self.name = name
    self.inputs = tuple(inputs)
    self.outputs = tuple(outputs)
    self.type = "PyFunc"

  @property
  def graph(self):
    raise CrossgradError(
        "the gradient reads op.graph, which only exists in a tf.compat.v1 graph",
        op=self.name, argument="op.graph",
        hint="Pass what the gradient needs as an input of the py_func instead")

  def __repr__(self) -> str:
    return f"<crossgrad.tf1.LegacyOp {self.name!r} ({len(self.inputs)} inputs)>"


def _qualname(fn: Any) -> str:
  return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def call_grad(grad: Callable[..., Any], op: Any, upstream: Sequence[Any], n_inputs: int,
              op_name: str) -> list[Any]:
  """Runs a legacy ``grad(op, *upstream)``; one gradient per input, or a clear error."""
  result = grad(op, *upstream)
  grads = list(result) if isinstance(result, (list, tuple)) else [result]
  if len(grads) != n_inputs:
    raise CrossgradError(
        "the legacy gradient returned the wrong number of gradients", op=op_name,
        argument=f"grad {_qualname(grad)}",
        expected=f"{n_inputs} (one per input of the py_func)", actual=len(grads),
        hint="Return one gradient per entry of `inp` (None where an input has none)")
  return grads


# The drop-in `py_func`.


def _dispatch_graph_grad(op, *upstream):
  grad, op_name = _GRAPH_GRADS[op.graph][op.name]
  upstream = [tf.zeros_like(o) if u is None else u for u, o in zip(upstream, op.outputs)]
  return call_grad(grad, op, upstream, len(op.inputs), op_name)


try:
  tf.RegisterGradient(_OVERRIDE_NAME)(_dispatch_graph_grad)
except KeyError:  # This module was loaded again; the first registration stays.
  pass


def _graph_py_func(graph, func, inp, Tout, stateful, name, grad):
  """The TF1 path, in a `tf.compat.v1` graph: a real PyFunc with a real override."""
  overrides = {"PyFunc": _OVERRIDE_NAME, "PyFuncStateless": _OVERRIDE_NAME}
  with graph.gradient_override_map(overrides):
    out = tf.compat.v1.py_func(func, inp, Tout, stateful=stateful, name=name)
  op = (out[0] if isinstance(out, (list, tuple)) else out).op
  _GRAPH_GRADS.setdefault(graph, {})[op.name] = (grad, name or _qualname(func))
  return out


def _numpy_function(func, inp, Tout, stateful, name) -> list[Any]:
  """`tf.numpy_function`'s outputs as a list (it returns a lone tensor for one output)."""
  out = tf.numpy_function(func, list(inp), Tout, stateful=stateful, name=name)
  return list(out) if isinstance(out, (list, tuple)) else [out]


def _tf2_py_func(func, inp, Tout, stateful, name, grad):
  """The TF2 path (eager and `tf.function`): `tf.numpy_function` in `tf.custom_gradient`."""
  op_name = name or _qualname(func)
  single = not isinstance(Tout, (list, tuple))

  @tf.custom_gradient
  def core(*inputs):
    outputs = _numpy_function(func, inputs, Tout, stateful, name)

    def backward(*upstream):
      upstream = [tf.zeros_like(o) if u is None else u for u, o in zip(upstream, outputs)]
      return call_grad(grad, LegacyOp(op_name, inputs, outputs), upstream, len(inputs),
                       op_name)

    return (outputs[0] if single else outputs), backward

  return core(*[tf.convert_to_tensor(x) for x in inp])


def py_func(func: Callable[..., Any], inp: Sequence[Any], Tout: Any, stateful: bool = True,
            name: str | None = None, grad: Callable[..., Any] | None = None):
  """Drop-in for the seeds' ``py_func(func, inp, Tout, stateful, name, grad)`` helper.

  ``func`` is the NumPy forward; ``grad(op, *grads)`` the legacy TF gradient, reading
  ``op.inputs`` / ``op.outputs`` and returning one gradient per input. In a
  `tf.compat.v1` graph this builds a real PyFunc op under `gradient_override_map`
  (one fixed registration, no random names); in TF2 eager and under `tf.function` it
  is `tf.numpy_function` inside `tf.custom_gradient`. Without ``grad`` it is plain
  `tf.compat.v1.py_func` / `tf.numpy_function`, which have no gradient.
  """
  if grad is not None and not callable(grad):
    raise CrossgradError("grad must be callable", op=name, argument="grad",
                         expected="grad(op, *grads)", actual=type(grad).__name__)
  if not tf.executing_eagerly() and not tf.inside_function():
    graph = tf.compat.v1.get_default_graph()
    if grad is None:
      return tf.compat.v1.py_func(func, inp, Tout, stateful=stateful, name=name)
    return _graph_py_func(graph, func, inp, Tout, stateful, name, grad)
  if grad is None:
    out = _numpy_function(func, inp, Tout, stateful, name)
    return out if isinstance(Tout, (list, tuple)) else out[0]
  return _tf2_py_func(func, inp, Tout, stateful, name, grad)


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


# `port`: a legacy pair as a registry op.


def _code_names(code: types.CodeType) -> set[str]:
  names = set(code.co_names)
  for const in code.co_consts:
    if isinstance(const, types.CodeType):
      names |= _code_names(const)
  return names


def _check_portable(name: str, grad: Callable[..., Any], stateful: bool):
  if stateful:
    raise CrossgradError(
        "a stateful NumPy forward cannot be ported", op=name, argument="stateful",
        expected="False (the same inputs always give the same outputs)", actual=True,
        hint="jax.pure_callback may skip, repeat or reorder calls, and the cross-check "
             "compares runs; keep this op on crossgrad.tf1.py_func in TensorFlow, or make "
             "its state (random keys, counters) an explicit input")
  code = getattr(grad, "__code__", None)
  used = sorted(_code_names(code) & GRAPH_STATE_NAMES) if code is not None else []
  if used:
    raise CrossgradError(
        "the gradient reads TF1 graph state (collections), which TF2 and JAX do not have",
        op=name, argument=f"grad {_qualname(grad)}", expected="a gradient of op.inputs, "
        "op.outputs and the upstream gradients only", actual=", ".join(used),
        hint="Pass the collection's tensors to the py_func as extra inputs")


def forward_input_names(name: str, forward: Callable[..., Any],
                        given: Sequence[str] | None = None) -> tuple[str, ...]:
  """The legacy forward's input names: ``given``, its parameters, or x0.. for a ufunc."""
  if given is not None:
    return tuple(given)
  if isinstance(forward, np.ufunc):
    return tuple(f"x{i}" for i in range(forward.nin))
  parameters = inspect.signature(forward).parameters.values()
  if any(p.kind == p.VAR_POSITIONAL for p in parameters):
    raise CrossgradError("cannot read the forward's inputs from '*args'", op=name,
                         argument="forward", hint="Pass port(..., input_names=(...))")
  return tuple(p.name for p in parameters
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


class _Port:
  """The backend-specific halves of a ported op, picked by ``xp.backend``."""

  def __init__(self, name, forward, grad, n_inputs, num_outputs, output_shapes, nondiff,
               jax_backward):
    self.name, self.forward, self.grad = name, forward, grad
    self.n_inputs, self.num_outputs = n_inputs, num_outputs
    self.output_shapes, self.nondiff, self.jax_backward = output_shapes, nondiff, jax_backward
    self._call_tf = None
    self._strategies: dict[tuple, str] = {}  # "call_tf" or "callback" per input specs.

  # Forward.

  def shapes(self, input_shapes) -> list[tuple]:
    if self.output_shapes is not None:
      return [tuple(s) for s in self.output_shapes(*input_shapes)]
    return [tuple(np.broadcast_shapes(*input_shapes))] * self.num_outputs

  def numpy_forward(self, *inputs) -> list[np.ndarray]:
    """The legacy forward; outputs cast to the inputs' floating dtype, shapes checked."""
    dtype = next((x.dtype for x in inputs if np.issubdtype(x.dtype, np.floating)),
                 np.dtype("float32"))
    result = self.forward(*inputs)
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    expected = self.shapes([np.shape(x) for x in inputs])
    got = [tuple(np.shape(o)) for o in outputs]
    if got != expected:
      raise CrossgradError("the NumPy forward's outputs differ from the declared shapes",
                           op=self.name, argument=f"forward {_qualname(self.forward)}",
                           expected=expected, actual=got,
                           hint="Pass port(..., num_outputs=..., output_shapes=...)")
    return [np.asarray(o, dtype) for o in outputs]

  def run_forward(self, xp, inputs):
    backend = xp.backend
    if backend == "numpy":
      outputs = self.numpy_forward(*[np.asarray(x) for x in inputs])
    elif backend == "tensorflow":
      dtype = next((x.dtype for x in inputs if x.dtype.is_floating), tf.float32)
      outputs = _numpy_function(self.numpy_forward, inputs, [dtype] * self.num_outputs,
                                False, self.name)
      if self.output_shapes is None:  # Unknown dimensions (tf.function signatures) stay so.
        shapes = [functools.reduce(tf.broadcast_static_shape, [x.shape for x in inputs])]
        shapes *= self.num_outputs
      else:
        shapes = self.shapes([tuple(x.shape) for x in inputs])
      for o, shape in zip(outputs, shapes):
        o.set_shape(shape)
    else:
      import jax  # pylint: disable=g-import-not-at-top
      dtype = next((x.dtype for x in inputs if np.issubdtype(x.dtype, np.floating)),
                   np.dtype("float32"))
      shapes = self.shapes([x.shape for x in inputs])
      structs = [jax.ShapeDtypeStruct(s, dtype) for s in shapes]
      outputs = jax.pure_callback(self.numpy_forward, structs, *inputs,
                                  vmap_method="sequential")
    outputs = list(outputs)
    return (outputs[0] if self.num_outputs == 1 else tuple(outputs)), (tuple(inputs),
                                                                      tuple(outputs))

  # Backward.

  def tf_grads(self, inputs, outputs, upstream) -> list[Any]:
    """The legacy grad on TF tensors; zeros for inputs it leaves without a gradient."""
    grads = call_grad(self.grad, LegacyOp(self.name, inputs, outputs), upstream,
                      self.n_inputs, self.name)
    return [None if i in self.nondiff else (tf.zeros_like(x) if g is None else g)
            for i, (x, g) in enumerate(zip(inputs, grads))]

  def _tf_flat(self, *flat):
    n, m = self.n_inputs, self.num_outputs
    grads = self.tf_grads(flat[:n], flat[n:n + m], flat[n + m:])
    return tuple(g for g in grads if g is not None)

  def _numpy_flat(self, *flat):
    flat = [tf.constant(np.asarray(x)) for x in flat]
    return tuple(g.numpy() for g in self._tf_flat(*flat))

  def uses_py_func(self, flat) -> bool:
    specs = [tf.TensorSpec(x.shape, x.dtype) for x in flat]
    graph = tf.function(self._tf_flat, autograph=False).get_concrete_function(*specs).graph
    return any(o.type in PYFUNC_TYPES for o in graph.get_operations())

  def jax_grads(self, flat):
    import jax  # pylint: disable=g-import-not-at-top
    from jax.experimental import jax2tf  # pylint: disable=g-import-not-at-top
    how = self.jax_backward
    if how == "auto":
      key = tuple((tuple(x.shape), str(x.dtype)) for x in flat)
      if key not in self._strategies:
        self._strategies[key] = "callback" if self.uses_py_func(flat) else "call_tf"
      how = self._strategies[key]
    if how == "call_tf":
      if self._call_tf is None:
        self._call_tf = jax2tf.call_tf(self._tf_flat)
      return self._call_tf(*flat)
    structs = [jax.ShapeDtypeStruct(x.shape, x.dtype)
               for i, x in enumerate(flat[:self.n_inputs]) if i not in self.nondiff]
    return jax.pure_callback(self._numpy_flat, structs, *flat, vmap_method="sequential")

  def run_backward(self, xp, residuals, g):
    inputs, outputs = residuals
    upstream = (g,) if self.num_outputs == 1 else tuple(g)
    if xp.backend == "tensorflow":
      return tuple(self.tf_grads(inputs, outputs, upstream))
    flat = (*inputs, *outputs, *upstream)
    if xp.backend == "numpy":
      diff = iter(self._numpy_flat(*flat))
    else:
      diff = iter(self.jax_grads(flat))
    return tuple(None if i in self.nondiff else next(diff) for i in range(self.n_inputs))


def port(name: str, forward: Callable[..., Any], grad: Callable[..., Any], *,
         gradient: str = "exact", sample: Callable[[Any], Sequence[Any]] | None = None,
         nondiff: Sequence[int | str] = (), num_outputs: int = 1,
         output_shapes: Callable[..., Sequence[Sequence[int]]] | None = None,
         input_names: Sequence[str] | None = None, stateful: bool = False,
         jax_backward: str = "auto", doc: str = "", register: bool = True) -> OpDef:
  """Turns a legacy (NumPy forward, TF ``grad(op, *grads)``) pair into a crossgrad op.

  Per backend: NumPy runs the legacy forward and evaluates the TF grad eagerly
  (the reference); TensorFlow wraps the forward in `tf.numpy_function` and runs the
  grad on the tensors; JAX wraps the forward in `jax.pure_callback` (a host call, not
  XLA-fusible) and runs the grad through `jax2tf.call_tf`, which compiles it with XLA
  under `jax.jit` (``jax_backward="call_tf"``), or, where the grad itself calls
  py_func, as a host callback into TF (``"callback"``; ``"auto"`` picks).

  Args:
    name: registry name.
    forward: the legacy NumPy forward ``forward(*inputs)``.
    grad: the legacy TF gradient ``grad(op, *grads)``.
    gradient: ``"exact"`` if grad is the forward's derivative, else ``"declared"`` (a
      legacy override is its own specification: `OpDef` has no surrogate for it).
    sample: ``sample(rng) -> inputs`` for the cross-check.
    nondiff: inputs without a gradient (names or indices).
    num_outputs: how many arrays the forward returns.
    output_shapes: ``output_shapes(*input_shapes) -> shapes``; default: every output
      has the inputs' broadcast shape.
    input_names: names of the inputs (default: the forward's parameter names).
    stateful: must be False; a stateful forward cannot be ported (`CrossgradError`).
    jax_backward: ``"auto"``, ``"call_tf"`` or ``"callback"``.
    doc: one line for ``crossgrad.check --list``.
    register: add the op to the registry.

  Returns:
    The `OpDef`. Outputs take the inputs' floating dtype (a legacy
    ``.astype(np.float32)`` is overridden), so the op runs in float32 and float64.
  """
  _check_portable(name, grad, stateful)
  if jax_backward not in JAX_BACKWARDS:
    raise CrossgradError("unknown jax_backward", op=name, argument="jax_backward",
                         expected=" or ".join(JAX_BACKWARDS), actual=repr(jax_backward))
  names = forward_input_names(name, forward, input_names)
  nondiff_argnums = {names.index(n) if isinstance(n, str) and n in names else n
                     for n in nondiff}
  impl = _Port(name, forward, grad, len(names), num_outputs, output_shapes,
               nondiff_argnums, jax_backward)

  def op_forward(xp, *inputs):
    return impl.run_forward(xp, inputs)

  op_forward.__signature__ = inspect.Signature(
      [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
       for n in ("xp",) + names])
  op = OpDef(
      name=name, forward=op_forward, backward=impl.run_backward, gradient=gradient,
      sample=sample, nondiff=nondiff, doc=doc or f"ported from {_qualname(forward)} / "
      f"{_qualname(grad)}",
      unsupported_modes={"tensorflow:jit": "the forward is a tf.numpy_function (host "
                                           "Python), which XLA cannot compile"})
  op_forward.port = impl
  if sample is not None:
    _check_deterministic(impl, sample)
  if not register:
    return op
  if name in op_registry.names():
    # Every port shares `op_forward`'s code, so compare the legacy functions instead.
    existing = getattr(op_registry.get(name).forward, "port", None)
    if existing is None or [_function_key(f) for f in (existing.forward, existing.grad)] != [
        _function_key(f) for f in (forward, grad)]:
      raise CrossgradError("name already registered with a different definition", op=name,
                           argument="name",
                           hint="Pick another name, or unregister the old op first")
    return op_registry.get(name)
  return op_registry.register(op)


def _check_deterministic(impl: _Port, sample: Callable[[Any], Sequence[Any]]):
  inputs = [np.asarray(x) for x in sample(np.random.default_rng(0))]
  first, second = impl.numpy_forward(*inputs), impl.numpy_forward(*inputs)
  if not all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, second)):
    raise CrossgradError(
        "the NumPy forward is stateful: two calls on the same inputs differ", op=impl.name,
        argument=f"forward {_qualname(impl.forward)}", expected="equal outputs",
        actual="different outputs",
        hint="Make its state (random keys, counters) an explicit input")
