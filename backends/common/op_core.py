"""The op core: what an emitted op does in every backend, written once.

A call of an emitted op follows one protocol, whatever the framework:

1. `OpCore.prepare` checks the number of inputs, makes them the framework's arrays and
   checks them (`validation.check_inputs`: differentiable inputs floating, then the op's
   own ``check_inputs``);
2. the framework's custom-gradient primitive (`tf.custom_gradient`, `jax.custom_jvp`,
   `torch.autograd.Function`; plain NumPy for the reference) calls `OpCore.forward`: the
   op's forward, its ``(outputs, residuals)`` result and its outputs' dtypes, checked;
3. its backward pass calls `OpCore.backward`: the ``g`` the op's backward gets (zeros for
   a floating output without a cotangent, None for an integer one), then the cotangents it
   returns, checked against the inputs.

Complex ops (``OpDef(allow_complex=True)``) write their backward in JAX's convention (what
``jax.vjp`` returns). TensorFlow's and torch's autodiff return the conjugate of that for
the conjugated upstream (for ``z * z`` and upstream ``g``: JAX ``g * 2z``, they
``g * conj(2z)``), so for an adapter with ``conjugate_complex`` the core conjugates the
complex upstream cotangents before the backward and the complex cotangents after it
(docs/dtypes.md): each framework's gradient of the op is then its own autodiff's.

The checks read static specs (`validation.ArraySpec`), so they run at trace time too (as
`jax.custom_vjp` checks its rules' outputs while tracing), and a misuse gives the same
`CrossgradError`, naming op, backend, argument, expected and actual, in every backend.

A framework supplies an `Adapter` (its name, namespace, ``spec_of`` and how inputs become
its arrays) and a ``primitive(core)`` that wraps ``core.forward`` / ``core.backward`` in its
custom-gradient mechanism; `emitter` joins them into the ``emit`` of `base.make_get`.
docs/backends.md shows a new backend plugging in.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol, Sequence

from crossgrad.backends.common import base
from crossgrad.registry import validation
from crossgrad.registry.opdef import OpDef
from crossgrad.registry.validation import ArraySpec


class Signature:
  """What an op core knows of the calls whose inputs have one tuple of keys
  (``Adapter.key_of``): whether they passed the input checks, the `Specs` of their forwards
  by output keys, and ``memo``, where its `Body` keeps what it learnt of them (None until
  it does)."""

  __slots__ = ("keys", "checked", "specs", "memo")

  def __init__(self, keys: tuple):
    self.keys, self.checked, self.specs, self.memo = keys, False, {}, None


class Body(Protocol):
  """How one op core runs its op's forward and backward (`Adapter.make_body`).

  ``signature`` is the `Signature` of the forward's inputs, or None while a tracer traces
  the call. A backward's ``args``, ``(residuals, g)``, come from a forward whose inputs had
  that signature.
  """

  def forward(self, fn: Callable[..., Any], xp: Any, inputs: Sequence[Any], params: dict,
              signature: Signature | None) -> Any:
    """``fn(xp, *inputs, **params)``: the op's forward."""

  def backward(self, fn: Callable[..., Any], xp: Any, args: Sequence[Any], params: dict,
               signature: Signature | None) -> Any:
    """``fn(xp, *args, **params)``: the op's backward."""


def _as_called(fn: Callable[..., Any], xp: Any, args: Sequence[Any], params: dict) -> Any:
  return fn(xp, *args, **params)


@dataclasses.dataclass(frozen=True)
class EveryCall:
  """A `Body` running forward and backward alike, ``run(fn, xp, args, params)``."""

  run: Callable[[Callable[..., Any], Any, Sequence[Any], dict], Any] = _as_called

  def forward(self, fn, xp, inputs, params, signature):
    del signature  # Unused: every call runs the same way.
    return self.run(fn, xp, inputs, params)

  def backward(self, fn, xp, args, params, signature):
    del signature
    return self.run(fn, xp, args, params)


@dataclasses.dataclass(frozen=True)
class Adapter:
  """What a framework supplies to the op core.

  Attributes:
    name: the backend's ``NAME``, as errors name it.
    xp: the namespace the op's forward and backward are handed.
    spec_of: static shape and dtype of one of the framework's arrays (at trace time too).
    constant_at_trace: wraps a function of static arguments (specs) that a tracer is to call
      while it traces, taking the result as a constant, rather than trace it (default:
      unchanged; torch: `torch.compiler.assume_constant_result`, as Dynamo cannot trace the
      NumPy reference a kernel's output shapes come from).
    key_of: a cheap hashable stand-in for ``spec_of(x)`` (default: ``spec_of``; torch:
      ``(x.shape, x.dtype)``): the core's per-signature caches are keyed by it and make
      specs only on a miss, the per-call cost of an eager step.
    to_arrays: the call's inputs (arrays, NumPy arrays, numbers, variables) as a list of
      the framework's arrays.
    as_output: one output of the forward as the framework's array (default: unchanged).
    namespace_for: given the op's inputs, the namespace its forward and backward get
      (default ``xp``; torch: one whose creation functions make arrays on the inputs'
      device, which a context manager would do eagerly but not under torch.compile).
    conjugate_complex: the framework's complex gradients are the conjugates of JAX's VJP
      (TensorFlow, torch): the core converts a complex op's backward (module docstring).
    make_body: makes one op core's `Body`, which runs the op's forward and backward
      (default `EveryCall`: ``fn(xp, *args, **params)``; TensorFlow and JAX hand the
      functions the standard's array object; torch's remembers, per signature, whether they
      can run on plain tensors).
    tracing: while it returns True the core checks every call in full and leaves its
      caches alone (torch: Dynamo traces the call, and would guard on them).
  """

  name: str
  xp: Any
  spec_of: Callable[[Any], ArraySpec]
  to_arrays: Callable[[Sequence[Any]], list[Any]]
  as_output: Callable[[Any], Any] = lambda x: x
  namespace_for: Callable[[Sequence[Any]], Any] | None = None
  conjugate_complex: bool = False
  make_body: Callable[[], Body] = EveryCall
  tracing: Callable[[], bool] = lambda: False
  key_of: Callable[[Any], Any] | None = None
  constant_at_trace: Callable[[Callable[..., Any]], Callable[..., Any]] = lambda fn: fn


@dataclasses.dataclass(frozen=True)
class Specs:
  """Static facts of one forward that its backward validates against."""

  inputs: tuple[ArraySpec, ...]
  outputs: tuple[ArraySpec, ...]
  single: bool  # The forward returned one array, not a tuple of them.
  # Of the inputs (None while traced): their keys, what a backward's bodies are told.
  signature: Signature | None = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class Forward:
  """One checked run of the op's forward."""

  outs: tuple[Any, ...]  # Every output, a tuple even for one.
  residuals: Any
  specs: Specs

  @property
  def outputs(self) -> Any:
    """The outputs as the op returns them: one array, or a tuple."""
    return self.outs[0] if self.specs.single else self.outs


_SEEN_LIMIT = 256  # Signatures an op core remembers as checked (then it starts afresh).


class OpCore:
  """One op with resolved static parameters, as every backend runs it.

  The checks depend on static specs only (shapes, dtypes, the parameters), so each runs
  once per signature: a call with inputs (and a forward with outputs) of specs seen before
  skips them, the per-call cost of an eager step (a new signature is checked in full, and a
  backward whose cotangents do not match their inputs' specs exactly gets the full check and
  its error).
  """

  # No instance dict: torch.compile guards that none shadows a method it calls.
  __slots__ = ("adapter", "op", "params", "name", "_n_inputs", "_key_of", "_signatures",
               "_body")

  def __init__(self, adapter: Adapter, op: OpDef, params: dict):
    self.adapter, self.op, self.params = adapter, op, params
    self.name = adapter.name
    self._n_inputs = len(op.input_names)
    self._key_of = adapter.key_of or adapter.spec_of
    self._signatures: dict[tuple, Signature] = {}
    self._body = adapter.make_body()

  def prepare(self, inputs: Sequence[Any]) -> list[Any]:
    """The call's inputs, counted, as the framework's arrays, checked (their specs, and
    their values where the op checks them and they are known)."""
    if len(inputs) != self._n_inputs:
      validation.check_input_count(self.op, self.name, inputs)
    arrays = self.adapter.to_arrays(inputs)
    if self.adapter.tracing():
      self._check_input_specs(arrays)
    else:
      signature = self._signature(arrays)
      if not signature.checked:
        self._check_input_specs(arrays)
        signature.checked = True
    if self.op.check_values is not None:
      validation.check_values(self.op, self.name, self.adapter.xp, arrays, self.params)
    return arrays

  def forward(self, inputs: Sequence[Any]) -> Forward:
    """The op's forward on prepared inputs: its result's form and its outputs' dtypes."""
    adapter = self.adapter
    tracing = adapter.tracing()
    signature = None if tracing else self._signature(inputs)
    result = self._body.forward(self.op.forward, self._namespace(inputs), inputs, self.params,
                                signature)
    outputs, residuals = validation.check_forward_result(self.op, self.name, result)
    outs = tuple(map(adapter.as_output, validation.as_tuple(outputs)))
    single = not isinstance(outputs, (tuple, list))
    if tracing:
      return Forward(outs, residuals, self._checked_specs(inputs, outs, single, None))
    key = (tuple(map(self._key_of, outs)), single)
    specs = signature.specs.get(key)
    if specs is None:
      specs = base.interned(signature.specs, key,
                            lambda _: self._checked_specs(inputs, outs, single, signature),
                            _SEEN_LIMIT)
    return Forward(outs, residuals, specs)

  def backward(self, residuals: Any, upstream: Sequence[Any], specs: Specs,
               zeros: Callable[[int], Any], *, on: Sequence[Any] = ()) -> tuple[Any, ...]:
    """The op's backward for output cotangents ``upstream`` (one per output, None where
    there is none; ``zeros(i)`` makes output i's), its cotangents checked against the
    inputs: one per input, None for a non-differentiable one. ``on``: the inputs, for the
    adapter's ``namespace_for``."""
    convert = self.adapter.conjugate_complex and self.op.allow_complex
    if convert:
      upstream = self._conjugated(upstream, specs.outputs)
    g = validation.cotangent_for(self.op, specs.outputs, upstream, zeros, specs.single)
    signature = None if self.adapter.tracing() else specs.signature
    cotangents = self._body.backward(self.op.backward, self._namespace(on), (residuals, g),
                                     self.params, signature)
    if not self._match(cotangents, specs):
      cotangents = validation.check_cotangents(self.op, self.name, specs.inputs, cotangents,
                                               self.adapter.spec_of)
    return self._conjugated(cotangents, specs.inputs) if convert else cotangents

  def _namespace(self, arrays: Sequence[Any]) -> Any:
    namespace_for = self.adapter.namespace_for
    return self.adapter.xp if namespace_for is None else namespace_for(arrays)

  def _signature(self, arrays: Sequence[Any]) -> Signature:
    """The `Signature` of ``arrays``' keys (made on a miss)."""
    keys = tuple(map(self._key_of, arrays))
    found = self._signatures.get(keys)
    return found or base.interned(self._signatures, keys, Signature, _SEEN_LIMIT)

  def _check_input_specs(self, arrays: Sequence[Any]) -> None:
    """Checks a call's input specs (`validation.check_inputs`)."""
    validation.check_inputs(self.op, self.name, tuple(map(self.adapter.spec_of, arrays)),
                            self.params)

  def _checked_specs(self, inputs: Sequence[Any], outs: Sequence[Any], single: bool,
                     signature: Signature | None) -> Specs:
    """The `Specs` of a forward, its outputs' dtypes checked."""
    spec_of = self.adapter.spec_of
    in_specs, out_specs = tuple(map(spec_of, inputs)), tuple(map(spec_of, outs))
    validation.check_output_dtypes(self.op, self.name, in_specs, out_specs)
    return Specs(in_specs, out_specs, single, signature)

  def _match(self, cotangents: Any, specs: Specs) -> bool:
    """Whether ``cotangents`` is a tuple with, for each input, None where it is
    non-differentiable and else an array of exactly its spec (its key): what
    `validation.check_cotangents` accepts (and then returns unchanged). Eager only (the
    keys are the signature's)."""
    if (specs.signature is None or type(cotangents) is not tuple
        or len(cotangents) != self._n_inputs):
      return False
    nondiff, key_of = self.op.nondiff_argnums, self._key_of
    for i, (ct, key) in enumerate(zip(cotangents, specs.signature.keys)):
      if (ct is None) != (i in nondiff) or ct is not None and key_of(ct) != key:
        return False
    return True

  def _conjugated(self, arrays: Sequence[Any], specs: Sequence[ArraySpec]) -> tuple[Any, ...]:
    """``arrays`` with the complex ones (by ``specs``) conjugated: JAX's convention to the
    framework's and back (the conversion is its own inverse)."""
    return tuple(self.adapter.xp.conj(a) if a is not None and spec.is_complex else a
                 for a, spec in zip(arrays, specs))


def emitter(adapter: Adapter, primitive: Callable[[OpCore], Callable[..., Any]]):
  """A backend's ``emit`` for `base.make_get`: ``primitive(core)`` is the framework's
  differentiable function of prepared inputs, made once per (op, parameters); the emitted
  op prepares its inputs (`OpCore.prepare`) and calls it. The emitted op keeps both, as
  ``core`` and ``primitive``."""
  def emit(op: OpDef, params: dict) -> Callable[..., Any]:
    core = OpCore(adapter, op, params)
    run = primitive(core)

    def call(*inputs):
      return run(*core.prepare(inputs))

    call.core, call.primitive = core, run
    return call
  return emit


def check_run(backend: str, op: OpDef, mode: str, modes: Sequence[str],
              inputs: Sequence[Any]) -> None:
  """What every backend's `evaluate` checks first: a known mode, the number of inputs."""
  base.check_mode(backend, mode, tuple(modes))
  validation.check_input_count(op, backend, inputs)
