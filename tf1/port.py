"""`port`: a legacy (forward, TF ``grad(op, *grads)``) pair as a crossgrad `OpDef`.

The forward is one of three kinds, which decide where the op can run:

- an op type (``port(name, "Sign", "Identity")``): the forward is the op type's own,
  written in ``xp`` (`op_types`); native in every backend.
- TF code (``framework="tensorflow"``, or a ``Defun``): TensorFlow runs it; JAX replays
  it with ``xp`` (`translate`), or calls TF through `jax2tf.call_tf`.
- NumPy code (the default, a py_func forward): `tf.numpy_function` / `jax.pure_callback`,
  on the host; refused under TF's XLA, not differentiable twice in JAX.

The legacy gradient runs unchanged on TF tensors in TensorFlow (and, eagerly, as the
NumPy reference). In JAX it is replayed with ``xp`` where every op it makes has a
translation (``jax_backward="native"``), else runs through `jax2tf.call_tf`
(``"call_tf"``) or, where it calls py_func itself, as a host callback into TF
(``"callback"``); ``"auto"`` picks in that order.
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from crossgrad.registry import op_registry
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef
from crossgrad.tf1 import drop_in
from crossgrad.tf1 import jax_twin
from crossgrad.tf1 import legacy
from crossgrad.tf1 import op_types
from crossgrad.tf1 import translate

JAX_BACKWARDS = ("auto", "native", "call_tf", "callback")
FRAMEWORKS = ("numpy", "tensorflow")
# Names a gradient uses to read TF1 graph state, which TF2 and JAX do not have.
GRAPH_STATE_NAMES = frozenset({
    "get_collection", "get_collection_ref", "add_to_collection", "GraphKeys",
    "get_default_graph"})
# Names by which a gradient calls NumPy on the host.
HOST_NAMES = frozenset({"py_func", "numpy_function", "py_function"})
_NUMPY_XLA = "the forward is NumPy code run on the host (tf.numpy_function), which XLA " \
             "cannot compile"


def _code_names(code: types.CodeType) -> set[str]:
  names = set(code.co_names)
  for const in code.co_consts:
    if isinstance(const, types.CodeType):
      names |= _code_names(const)
  return names


def _names_used(fn: Any) -> set[str]:
  code = getattr(fn, "__code__", None)
  return _code_names(code) if code is not None else set()


def _check_grad(name: str, grad: Callable[..., Any]):
  used = sorted(_names_used(grad) & GRAPH_STATE_NAMES)
  if used:
    raise CrossgradError(
        "the gradient reads TF1 graph state (collections), which TF2 and JAX do not have",
        op=name, argument=f"grad {legacy.qualname(grad)}", expected="a gradient of "
        "op.inputs, op.outputs and the upstream gradients only", actual=", ".join(used),
        hint="Pass the collection's tensors to the py_func as extra inputs")


def forward_input_names(name: str, forward: Callable[..., Any],
                        given: Sequence[str] | None = None) -> tuple[str, ...]:
  """The forward's inputs: ``given``, else its positional parameters without defaults
  (``np.round(a, decimals=0, out=None)`` has one), or x0.. for a ufunc."""
  if given is not None:
    return tuple(given)
  if isinstance(forward, np.ufunc):
    return tuple(f"x{i}" for i in range(forward.nin))
  try:
    parameters = inspect.signature(forward).parameters.values()
  except (TypeError, ValueError):
    raise CrossgradError("cannot read the forward's parameters", op=name,
                         argument="forward", actual=legacy.qualname(forward),
                         hint="Pass port(..., input_names=(...))") from None
  if any(p.kind == p.VAR_POSITIONAL for p in parameters):
    raise CrossgradError("cannot read the forward's inputs from '*args'", op=name,
                         argument="forward", hint="Pass port(..., input_names=(...))")
  return tuple(p.name for p in parameters if p.default is p.empty
               and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _floating(dtypes) -> Any:
  return next((d for d in dtypes if np.issubdtype(np.dtype(d), np.floating)),
              np.dtype("float32"))


def _specs(arrays) -> list[tf.TensorSpec]:
  return [tf.TensorSpec(tuple(x.shape), tf.as_dtype(np.dtype(
      getattr(x.dtype, "name", str(x.dtype).removeprefix("torch."))))) for x in arrays]


class _Port:
  """The backend-specific halves of a ported op, picked by ``xp.backend``."""

  def __init__(self, name, kind, forward, grad, n_inputs, num_outputs, output_shapes,
               nondiff, jax_backward):
    self.name, self.kind, self.forward, self.grad = name, kind, forward, grad
    self.n_inputs, self.num_outputs = n_inputs, num_outputs
    self.output_shapes, self.nondiff, self.jax_backward = output_shapes, nondiff, jax_backward
    self.op_type = forward.name if kind == "op_type" else (
        "PyFunc" if kind == "numpy" else legacy.qualname(forward))
    self._programs: dict[tuple, translate.Program] = {}
    self._tf_calls: dict[tuple, Callable[..., Any]] = {}
    self._warned = False

  def _program(self, fn, arrays) -> translate.Program:
    key = (fn.__name__,) + tuple((tuple(x.shape), str(x.dtype)) for x in arrays)
    if key not in self._programs:
      self._programs[key] = translate.Program(fn, _specs(arrays))
    return self._programs[key]

  def _tf_call(self, fn, what, structs=None):
    """``fn`` through call_tf; ``structs``: its outputs' shapes and dtypes, where TF cannot
    tell them statically (a shape computed from values)."""
    key = (fn.__name__, None if structs is None else tuple(
        (s.shape, str(s.dtype)) for s in structs))
    if key not in self._tf_calls:
      self._tf_calls[key] = jax_twin.tf_call(
          self.name, what, fn, hint="Give every TF op it makes an xp translation "
                                    "(crossgrad.tf1.handlers.HANDLERS)", structs=structs)
    return self._tf_calls[key]

  # Forward.

  def shapes(self, input_shapes) -> list[tuple]:
    if self.output_shapes is None:
      return [tuple(np.broadcast_shapes(*input_shapes))] * self.num_outputs
    if callable(self.output_shapes):
      return [tuple(s) for s in self.output_shapes(*input_shapes)]
    return [tuple(s) for s in self.output_shapes]

  def numpy_forward(self, *inputs) -> list[np.ndarray]:
    """The legacy NumPy forward; outputs cast to the inputs' floating dtype, shapes checked."""
    dtype = _floating([x.dtype for x in inputs])
    result = self.forward(*inputs)
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    expected = self.shapes([np.shape(x) for x in inputs])
    got = [tuple(np.shape(o)) for o in outputs]
    if got != expected:
      raise CrossgradError("the NumPy forward's outputs differ from the declared shapes",
                           op=self.name, argument=f"forward {legacy.qualname(self.forward)}",
                           expected=expected, actual=got,
                           hint="Pass port(..., num_outputs=..., output_shapes=...) "
                                "(port_check: --num_outputs, --output_shapes)")
    return [np.asarray(o, dtype) for o in outputs]

  def _tf_forward(self, *inputs):
    out = self.forward(*inputs)
    return tuple(out) if isinstance(out, (list, tuple)) else (out,)

  def _numpy_kind_forward(self, xp, inputs):
    if xp.backend == "numpy":
      return self.numpy_forward(*[np.asarray(x) for x in inputs])
    if xp.backend == "tensorflow":
      dtype = _floating([x.dtype.as_numpy_dtype for x in inputs])
      outputs = drop_in.numpy_function(self.numpy_forward, inputs,
                                       [dtype] * self.num_outputs, False, self.name)
      if self.output_shapes is None:  # Unknown dimensions (tf.function signatures) stay so.
        shapes = [functools.reduce(tf.broadcast_static_shape, [x.shape for x in inputs])]
        shapes *= self.num_outputs
      else:
        shapes = self.shapes([tuple(x.shape) for x in inputs])
      for o, shape in zip(outputs, shapes):
        o.set_shape(shape)
      return outputs
    import jax  # pylint: disable=g-import-not-at-top
    dtype = _floating([x.dtype for x in inputs])
    structs = [jax.ShapeDtypeStruct(s, dtype) for s in self.shapes([x.shape for x in inputs])]
    return jax_twin.host_call(self.name, "the NumPy forward", self.numpy_forward, structs,
                              *inputs, hint="Port the op with a TF or op-type forward")

  def _tensorflow_kind_forward(self, xp, inputs):
    if xp.backend == "tensorflow":
      return list(legacy.host_free_under_xla(self.name, "the forward", self._tf_forward,
                                             *inputs))
    if xp.backend == "numpy":
      return [o.numpy() for o in self._tf_forward(*[tf.constant(x) for x in inputs])]
    program = self._program(self._tf_forward, inputs)
    outputs = None if program.missing else self._native(xp, program, inputs)
    if outputs is not None:
      return outputs
    return list(self._tf_call(self._tf_forward, "the TF forward")(*inputs))

  def run_forward(self, xp, inputs, params):
    inputs = _legacy_arrays(xp, inputs)
    if self.kind == "op_type":
      outputs = [self.forward.forward(xp, *inputs, **params)]
    elif self.kind == "tensorflow":
      outputs = self._tensorflow_kind_forward(xp, inputs)
    else:
      outputs = self._numpy_kind_forward(xp, inputs)
    return (outputs[0] if self.num_outputs == 1 else tuple(outputs)), (tuple(inputs),
                                                                      tuple(outputs))

  # Backward.

  def tf_grads(self, inputs, outputs, upstream) -> list[Any]:
    """The legacy grad on TF tensors; zeros for inputs it leaves without a gradient, each
    gradient in its input's dtype."""
    def make_op(ins, outs):
      attrs = {"T": ins[0].dtype, "SrcT": ins[0].dtype, "DstT": outs[0].dtype}
      return legacy.LegacyOp(self.name, ins, outs, op_type=self.op_type, attrs=attrs)

    grads = legacy.call_grad_in_graph(self.grad, make_op, inputs, outputs, upstream,
                                      self.name, self.op_type)
    return [None if i in self.nondiff else tf.zeros_like(x) if g is None else
            tf.cast(legacy.dense(g), x.dtype) for i, (x, g) in enumerate(zip(inputs, grads))]

  def _tf_flat(self, *flat):
    n, m = self.n_inputs, self.num_outputs
    grads = self.tf_grads(flat[:n], flat[n:n + m], flat[n + m:])
    return tuple(g for g in grads if g is not None)

  def _numpy_flat(self, *flat):
    return tuple(g.numpy() for g in self._tf_flat(*[tf.constant(np.asarray(x)) for x in flat]))

  def jax_strategy(self, flat) -> tuple[str, translate.Program]:
    """``jax_backward`` resolved for these input specs, with the translated gradient."""
    program = self._program(self._tf_flat, flat)
    how = self.jax_backward
    if how == "auto":
      how = ("native" if not program.missing else
             "callback" if program.has_py_func else "call_tf")
    if how == "native" and program.missing:
      self._refuse_native(program.missing)
    return how, program

  def _refuse_native(self, reasons: Sequence[str]):
    raise CrossgradError(
        "the legacy gradient cannot run as native JAX code", op=self.name, backend="jax",
        argument=f"grad {legacy.qualname(self.grad)}", actual="; ".join(reasons),
        hint="Use port(..., jax_backward='call_tf' or 'callback'), or open an issue for the "
             "missing TF op types (python -m crossgrad.tf1.coverage lists the translated ones)")

  def _native(self, xp, program, flat):
    """The translated program's outputs, or None (with the reason in ``program.missing``)
    where a handler cannot replay an op on these arrays (`"native"`: a `CrossgradError`)."""
    try:
      return program(xp, *flat)
    except CrossgradError:
      raise
    except Exception as e:  # pylint: disable=broad-except  # A handler's limit: fall back.
      reason = f"replaying it in JAX failed: {type(e).__name__}: {str(e)[:200]}"
      if self.jax_backward == "native":
        self._refuse_native([reason])
      program.missing.append(reason)
      return None

  def _warn_once(self, how: str, reasons: Sequence[str]):
    if not self._warned:
      self._warned = True
      warnings.warn(f"crossgrad.tf1.port {self.name!r}: the JAX backward runs through "
                    f"{how}, not natively: {'; '.join(reasons)}", stacklevel=4)

  def jax_grads(self, xp, flat):
    import jax  # pylint: disable=g-import-not-at-top
    how, program = self.jax_strategy(flat)
    if how == "native":
      grads = self._native(xp, program, flat)
      if grads is not None:
        return grads
      how = "callback"  # Values decide shapes there, which XLA (call_tf) cannot compile.
    if self.jax_backward == "auto":
      self._warn_once(how, program.missing)
    structs = [jax.ShapeDtypeStruct(x.shape, x.dtype)
               for i, x in enumerate(flat[:self.n_inputs]) if i not in self.nondiff]
    if how == "call_tf":
      return self._tf_call(self._tf_flat, "the legacy gradient (run by jax2tf.call_tf)",
                           structs)(*flat)
    return jax_twin.host_call(self.name, "the legacy gradient (run on the host)",
                              self._numpy_flat, structs, *flat,
                              hint="Write the gradient with TF ops that have an xp "
                                   "translation, so it runs natively")

  def run_backward(self, xp, residuals, g, **params):
    del params  # Static parameters reach the gradient through the outputs' dtypes.
    inputs, outputs = residuals
    upstream = (g,) if self.num_outputs == 1 else tuple(g)
    upstream = [xp.zeros_like(o) if u is None else u for u, o in zip(upstream, outputs)]
    if xp.backend == "tensorflow":
      inputs, outputs, upstream = (_legacy_arrays(xp, a) for a in (inputs, outputs, upstream))
      return tuple(self.tf_grads(inputs, outputs, upstream))
    flat = (*inputs, *outputs, *upstream)
    diff = iter(self._numpy_flat(*flat) if xp.backend == "numpy" else
                self.jax_grads(xp, flat))
    return tuple(None if i in self.nondiff else next(diff) for i in range(self.n_inputs))


def _legacy_arrays(xp, arrays):
  """TensorFlow's own tensors for legacy TF code, which reads TensorShapes: an op's body in
  TensorFlow holds the standard's array object, which converts through ``__tf_tensor__``."""
  if xp.backend != "tensorflow":
    return arrays
  return [tf.convert_to_tensor(x) for x in arrays]


def _kind(name, forward, grad, framework):
  """(kind, forward, grad): a Defun (TF1's or crossgrad's) brings its python_grad_func."""
  if isinstance(forward, str):
    return "op_type", op_types.get(forward), grad
  defun_forward = getattr(forward, "_func", None) or getattr(forward, "forward", None)
  defun_grad = getattr(forward, "_python_grad_func", None) or getattr(
      forward, "python_grad_func", None)
  if defun_forward is not None and defun_grad is not None:
    return "tensorflow", defun_forward, grad if grad is not None else defun_grad
  if framework not in FRAMEWORKS:
    raise CrossgradError("unknown framework", op=name, argument="framework",
                         expected=" or ".join(FRAMEWORKS), actual=repr(framework))
  if grad is None:
    raise CrossgradError("no gradient given", op=name, argument="grad",
                         expected="grad(op, *grads) or a registered name", actual=None)
  return framework, forward, grad


def _calls_host(grad: Callable[..., Any]) -> bool:
  """Whether the legacy gradient calls NumPy on the host (py_func and its kin)."""
  return bool(_names_used(grad) & HOST_NAMES)


def _unsupported_modes(kind: str, grad: Callable[..., Any]) -> dict[str, str]:
  # Ports reach NumPy and TF code (forwards, translated gradients) through TF and JAX
  # host calls and jax2tf; the torch backend has no such bridge yet.
  modes = {f"torch:{mode}": "TF1 ports run legacy code through TF and JAX (host calls, "
                            "jax2tf), which the torch backend does not bridge yet"
           for mode in ("eager", "compile", "vmap", "batched_vjp")}
  host_grad = _calls_host(grad)
  if kind == "numpy":
    modes["tensorflow:jit"] = _NUMPY_XLA
  elif host_grad:
    modes["tensorflow:jit"] = "the gradient calls py_func (NumPy on the host), which XLA " \
                              "cannot compile"
  if kind == "numpy" or host_grad:
    modes["tensorflow:vectorized_map"] = "tf.numpy_function has no vectorization (pfor) rule"
    for mode in ("jax:export", "tensorflow:jax2tf"):
      modes[mode] = "jax.export cannot serialise host callbacks (the NumPy code)"
  # Forward mode transposes the backward, which needs it linear in the upstream gradient;
  # legacy gradients often are not (guided backprop branches on it, the seeds' cube
  # ignores it), so ports stay reverse mode only (in JAX a jax.custom_vjp).
  for backend in ("jax", "tensorflow"):
    modes[f"{backend}:jvp"] = "a legacy gradient need not be linear in the upstream " \
                              "gradient, so it has no transpose (forward mode)"
  return modes


def _not_differentiable(kind: str, grad: Callable[..., Any], jax_backward: str) -> str | None:
  if kind == "numpy":
    return "its residuals come from a NumPy forward run on the host"
  if _calls_host(grad) or jax_backward in ("call_tf", "callback"):
    return "the gradient runs outside the framework (py_func, host callback or call_tf)"
  return None


def _sample_outputs(impl: _Port, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
  if impl.kind == "op_type":
    import array_api_compat.numpy as xp  # pylint: disable=g-import-not-at-top
    return [np.asarray(impl.forward.forward(xp, *inputs))]
  if impl.kind == "numpy":
    return impl.numpy_forward(*inputs)
  return [o.numpy() for o in impl._tf_forward(*[tf.constant(x) for x in inputs])]  # pylint: disable=protected-access


def _sample_limits(impl: _Port, sample) -> dict[str, str]:
  """What the sample shows a port cannot do, as ``unsupported_modes``: second derivatives
  where the gradient cannot be built in float64 (the dtype of the second-order reference),
  or where its JAX backward resolves to call_tf or a host callback (JAX cannot
  differentiate those)."""
  if sample is None:
    return {}
  inputs = [np.asarray(x) for x in sample(np.random.default_rng(0))]
  limits = {}
  for dtype in ("float64", "float32"):
    cast = [x.astype(dtype) if np.issubdtype(x.dtype, np.floating) else x for x in inputs]
    try:
      outputs = _sample_outputs(impl, cast)
      program = impl._program(impl._tf_flat, [*cast, *outputs, *outputs])  # pylint: disable=protected-access
    except Exception as e:  # pylint: disable=broad-except  # Reported, not raised, here.
      if dtype == "float64":
        what = f"{e.problem}: {e.actual}" if isinstance(e, CrossgradError) else \
            f"{type(e).__name__}: {str(e).strip()[:200]}"
        reason = (f"the port cannot run in float64, the dtype of the second-order reference "
                  f"({what})")
        limits.update({"jax:second_order": reason, "tensorflow:second_order": reason})
      continue
    if program.missing and impl.jax_backward == "auto":
      how = "a host callback" if program.has_py_func else "jax2tf.call_tf"
      limits.setdefault("jax:second_order", f"the JAX backward runs through {how}, which JAX "
                        f"cannot differentiate: {'; '.join(program.missing)}")
  return limits


def port(name: str, forward: Callable[..., Any] | str, grad: Callable[..., Any] | str | None
         = None, *, framework: str = "numpy", gradient: str | None = None,
         sample: Callable[[Any], Sequence[Any]] | None = None,
         nondiff: Sequence[int | str] = (), num_outputs: int = 1,
         output_shapes: Callable[..., Sequence[Sequence[int]]] | Sequence[Sequence[int]]
         | None = None, input_names: Sequence[str] | None = None, stateful: bool = False,
         jax_backward: str = "auto", doc: str = "", register: bool = True) -> OpDef:
  """Turns a legacy (forward, TF ``grad(op, *grads)``) pair into a crossgrad op.

  Args:
    name: registry name.
    forward: an op type of `OP_TYPES` (``"Sign"``: the pair is the override
      ``{"Sign": grad}``), a TF function (with ``framework="tensorflow"``), a TF1 or
      crossgrad ``Defun`` (its ``python_grad_func`` is the default ``grad``), or the
      legacy NumPy forward ``forward(*inputs)``.
    grad: the legacy gradient ``grad(op, *grads)``, or a name registered with
      `tf.RegisterGradient` (``"Identity"``, ``"GuidedRelu"``).
    framework: ``"numpy"`` or ``"tensorflow"``: what a callable forward is written in.
    gradient: ``"exact"`` if grad is the forward's derivative, else ``"declared"`` (a
      legacy override is its own specification; default: declared for an op type, exact
      otherwise).
    sample: ``sample(rng) -> inputs`` for the cross-check (an op type's default: standard
      normal arrays of shape (3, 4)).
    nondiff: inputs without a gradient (names or indices).
    num_outputs: how many arrays a NumPy or TF forward returns.
    output_shapes: a NumPy forward's output shapes, or ``output_shapes(*input_shapes)``;
      default: every output has the inputs' broadcast shape.
    input_names: names of the inputs (default: the op type's, or the forward's
      parameters without defaults).
    stateful: must be False; a stateful NumPy forward cannot be ported (`CrossgradError`).
    jax_backward: ``"auto"``, ``"native"``, ``"call_tf"`` or ``"callback"``.
    doc: one line for ``crossgrad.check --list``.
    register: add the op to the registry.

  Returns:
    The `OpDef`. A NumPy forward's outputs take the inputs' floating dtype (a legacy
    ``.astype(np.float32)`` is overridden), so the op runs in float32 and float64; each
    gradient is cast to its input's dtype.
  """
  kind, forward, grad = _kind(name, forward, grad, framework)
  grad = legacy.resolve_grad(grad, op=name)
  label = forward.name if kind == "op_type" else legacy.qualname(forward)
  _check_grad(name, grad)
  _check_options(name, kind, stateful, jax_backward)
  _check_gradient(name, gradient)
  if kind == "op_type":
    names, params, num_outputs = tuple(input_names or forward.inputs), forward.params, 1
    sample = sample or (lambda rng: tuple(rng.standard_normal((3, 4)) for _ in names))
  else:
    names, params = forward_input_names(name, forward, input_names), {}
  nondiff_argnums = {names.index(n) if isinstance(n, str) and n in names else n
                     for n in nondiff}
  impl = _Port(name, kind, forward, grad, len(names), num_outputs, output_shapes,
               nondiff_argnums, jax_backward)

  op_forward = _forward_function(impl, names, params)
  op = OpDef(
      name=name, forward=op_forward, backward=impl.run_backward,
      gradient=gradient or ("declared" if kind == "op_type" else "exact"), sample=sample,
      nondiff=nondiff, param_sets=({}, {"dtype": "float64"}) if params else ({},),
      doc=doc or f"ported from {label} / {legacy.qualname(grad)}",
      unsupported_modes={**_unsupported_modes(kind, grad), **_sample_limits(impl, sample)},
      backward_not_differentiable=_not_differentiable(kind, grad, jax_backward),
      special_differences=_OP_TYPE_DIFFERENCES if kind == "op_type" else {})
  op_forward.port = impl
  op_forward.defined_by = (forward, grad)  # What `register` compares: the legacy pair.
  if sample is not None and kind == "numpy":
    _check_deterministic(impl, sample)
  if not register:
    return op
  return op_registry.register(op)


def _check_options(name: str, kind: str, stateful: bool, jax_backward: str) -> None:
  """Raises `CrossgradError` for a stateful NumPy forward or an unknown ``jax_backward``."""
  if stateful and kind == "numpy":
    raise CrossgradError(
        "a stateful NumPy forward cannot be ported", op=name, argument="stateful",
        expected="False (the same inputs always give the same outputs)", actual=True,
        hint="jax.pure_callback may skip, repeat or reorder calls, and the cross-check "
             "compares runs; keep this op on crossgrad.tf1.py_func in TensorFlow, or make "
             "its state (random keys, counters) an explicit input")
  if jax_backward not in JAX_BACKWARDS:
    raise CrossgradError("unknown jax_backward", op=name, argument="jax_backward",
                         expected=" or ".join(JAX_BACKWARDS), actual=repr(jax_backward))


def _check_gradient(name: str, gradient: str | None) -> None:
  """A port has no surrogate: its legacy gradient is the specification, so a port with
  ``gradient="surrogate"`` is refused with a hint to say "declared"."""
  if gradient == "surrogate":
    raise CrossgradError(
        "a port cannot declare gradient='surrogate': it has no surrogate function, its legacy "
        "gradient is the specification", op=name, argument="gradient",
        expected="'declared' (the legacy gradient is no derivative of the forward: a "
                 "straight-through estimator, guided backprop) or 'exact' (it is one)",
        actual="'surrogate'",
        hint=f"Write tf1.port({name!r}, ..., gradient=\"declared\"); the cross-check then "
             "compares the TF, JAX and NumPy versions with each other, and crossgrad-port-check "
             "compares them with the tf.compat.v1 graph")


def _forward_function(impl: _Port, names: Sequence[str], params: dict) -> Callable[..., Any]:
  """The OpDef's ``forward(xp, *inputs, **params)``, with the port's input names and static
  parameters as its signature (what OpDef reads them from)."""

  def op_forward(xp, *inputs, **kw):
    return impl.run_forward(xp, inputs, kw)

  op_forward.__signature__ = inspect.Signature(
      [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in ("xp", *names)]
      + [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v)
         for k, v in params.items()])
  return op_forward


# TF's kernels (and XLA) and NumPy disagree on the sign of a zero result (relu, maximum and
# sign of -0.0) and TF reads subnormal inputs as zero; an op type's port inherits both.
_OP_TYPE_DIFFERENCES = {
    "signed_zero": "TF/XLA kernels of this op type may return -0.0 where NumPy returns 0.0",
    "daz": "TF and XLA read subnormal inputs as zero",
}


def _check_deterministic(impl: _Port, sample: Callable[[Any], Sequence[Any]]):
  inputs = [np.asarray(x) for x in sample(np.random.default_rng(0))]
  first, second = impl.numpy_forward(*inputs), impl.numpy_forward(*inputs)
  if not all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, second)):
    raise CrossgradError(
        "the NumPy forward is stateful: two calls on the same inputs differ", op=impl.name,
        argument=f"forward {legacy.qualname(impl.forward)}", expected="equal outputs",
        actual="different outputs",
        hint="Make its state (random keys, counters) an explicit input")
