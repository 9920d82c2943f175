"""The backend protocol: what a framework module implements to run crossgrad ops.

A backend is a module (or any object) with the members of `Backend`. The built-in ones
are `crossgrad.backends.numpy` (the reference), `.tensorflow`, `.jax` and `.torch`; another one
joins with `crossgrad.backends.common.base.register` and is then cross-checked like the others
(``cross_check(backends=[name])``). Backends name no op: everything op-specific comes
from the `OpDef` they are handed. `HigherOrder` lists optional members (forward mode,
second order, transformations, export round trips); the cross-check skips, with the
reason, what a backend leaves out. `Capabilities` declares every optional member's
default, in one place; `capabilities` reads a backend's. A backend's members never change
after import: what another component adds to it (a round trip) goes through a method.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ContextManager, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from crossgrad.registry.opdef import OpDef
from crossgrad.registry.validation import ArraySpec


@runtime_checkable
class Backend(Protocol):
  """One framework behind crossgrad.

  Attributes:
    NAME: the backend's name ("tensorflow"), as used in flags, reports and errors.
    VERSION: the framework's version string, for reports.
    MODES: execution modes `evaluate` takes, e.g. ("eager", "jit"); the first is eager.
      The cross-check runs all of them by default.
    xp: the namespace op definitions are written against (`crossgrad.registry.namespace`).
  """

  NAME: str
  VERSION: str
  MODES: tuple[str, ...]
  xp: Any

  def get(self, op: str | OpDef, /, **params: Any) -> Callable[..., Any]:
    """The framework's differentiable function for ``op`` with static ``params``
    (``tf.custom_gradient``, ``jax.custom_vjp``, ...), cached per (op, params)."""

  def spec_of(self, x: Any) -> ArraySpec:
    """Static shape and dtype name of one of the framework's arrays (at trace time too)."""

  def devices(self) -> list[str]:
    """Every device the framework sees, as ``platform:index``, CPU first."""

  def evaluate(self, op: OpDef, params: dict, inputs: Sequence[np.ndarray],
               cotangent: Sequence[np.ndarray | None], *, device: str,
               mode: str) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray | None, ...]]:
    """Runs ``op`` on NumPy ``inputs`` on ``device`` in ``mode``: its outputs (a tuple) and
    the input cotangents for output ``cotangent`` (None for integer outputs), as NumPy,
    one entry per input (None for non-differentiable inputs)."""

  def precision_scope(self, arrays: Sequence[np.ndarray | None],
                      float32: str | None = None) -> ContextManager[Any]:
    """A scope in which the framework keeps the dtypes of ``arrays`` (e.g. JAX's x64) and,
    with ``float32="highest"``, computes float32 matmuls and convolutions in full float32
    precision (no TF32 or bfloat16 passes), the settings restored on exit; None leaves
    the framework's own precision."""

  def register_container(self, cls: type, flatten: Callable[[Any], tuple[Any, Any]],
                         unflatten: Callable[[Any, Any], Any]) -> None:
    """Lets the framework's transformations see through ``cls`` (a JAX pytree node);
    ``flatten(obj) -> (children, aux)``, ``unflatten(aux, children) -> obj``."""


@runtime_checkable
class HigherOrder(Protocol):
  """Optional members: forward mode, second order, transformations and export round trips.

  A backend may implement any of these; the cross-check reports a row kind it cannot
  serve as ``skipped`` with the reason (a missing member, an entry in
  ``UNSUPPORTED_CHECKS``, or a `NotImplementedError` raised for a mode).

  Attributes:
    EXTRA_MODES: further modes `evaluate` and `evaluate_higher_order` take that run only
      when asked for (``modes=``, ``--modes``): export round trips, e.g. ("saved_model",).
    TRANSFORMS: transformation modes `evaluate_transformed` takes, e.g. ("vmap", "scan").
    EXTRA_TRANSFORMS (optional, default none): further ones it takes that run only when
      asked for (``modes=``), e.g. torch's ("compiled_vmap",).
    UNSUPPORTED_CHECKS: ``{(check, mode): reason}`` for a higher-order check a mode cannot
      compute, e.g. ``{("jvp", "export"): "..."}``.

  Two flags: ``CONJUGATE_COMPLEX_GRADIENTS``, True where the framework's complex gradients
  are the conjugates of JAX's VJP (TensorFlow, torch; docs/dtypes.md): the cross-check then
  hands `evaluate` conjugated cotangents and conjugates the cotangents it returns, to
  compare them with the reference's (JAX's convention). ``NARROWED_INTEGERS``: True where
  the framework makes 64-bit integers 32-bit outside a 64-bit `precision_scope` (JAX
  without x64: its ``argmax`` is int32, NumPy's int64): the cross-check then compares such
  an integer output with the reference's by value.
  """

  EXTRA_MODES: tuple[str, ...]
  TRANSFORMS: tuple[str, ...]
  UNSUPPORTED_CHECKS: dict[tuple[str, str], str]

  def evaluate_higher_order(
      self, op: OpDef, params: dict, inputs: Sequence[np.ndarray],
      cotangent: Sequence[np.ndarray | None], tangents: Sequence[np.ndarray | None] | None,
      direction: Sequence[np.ndarray | None] | None, *, device: str, mode: str,
  ) -> tuple[tuple[np.ndarray | None, ...] | None, tuple[np.ndarray | None, ...] | None]:
    """In one program where the framework allows: the output tangents of forward mode for
    input ``tangents`` (one per output, None for integer outputs), and the gradient of
    <vjp(cotangent), direction> with respect to each input (the backward differentiated
    once more; None for non-differentiable inputs). ``tangents`` / ``direction`` are one
    array per input (None for non-differentiable ones); a whole argument None means that
    part is not wanted, and its result is None."""

  def evaluate_transformed(
      self, op: OpDef, params: dict, inputs: Sequence[np.ndarray],
      cotangent: Sequence[np.ndarray | None], *, device: str, transforms: Sequence[str],
  ) -> dict[str, tuple[tuple[np.ndarray, ...], tuple[np.ndarray | None, ...]]]:
    """For a batch (axis 0 of every input and cotangent), per transformation in
    ``transforms``: the outputs and input cotangents as `evaluate` gives them, batched."""


@runtime_checkable
class Arrays(Protocol):
  """Optional: how generic code handed this framework's arrays finds their backend (the
  sparse family's `SparseData`); arrays no backend claims belong to the reference, NumPy.

  Attributes:
    ARRAY_MODULES: prefixes of the module names of the framework's array types, tracers
      included (``("jax", "jaxlib")``).
  """

  ARRAY_MODULES: tuple[str, ...]


@runtime_checkable
class CpuDevices(Protocol):
  """Optional: splitting the host CPU into logical devices
  (`crossgrad.backends.common.cpu_devices`), so multi-device code runs without accelerators."""

  def set_cpu_device_count(self, count: int) -> int:
    """Gives the framework ``count`` CPU devices, ``cpu:0`` ... ``cpu:count-1``, unless it
    already started with another count (then nothing changes); returns the count it has."""


@runtime_checkable
class CompileCache(Protocol):
  """Optional: a compile cache across runs (`crossgrad.backends.common.compile_cache`)."""

  def enable_compile_cache(self, directory: str) -> None:
    """Keeps the framework's compiled programs in ``directory`` from now on, process-wide."""

  def compile_cache_stats(self) -> dict[str, int]:
    """``{"hits": n, "misses": n}`` since `enable_compile_cache`; ``{}`` before it."""


@runtime_checkable
class WarmUp(Protocol):
  """Optional: one-time start-up work begun before a check's first row."""

  def warm_up(self, modes: Sequence[str]) -> None:
    """Starts, without waiting for it, what the first evaluation in ``modes`` does first."""


@runtime_checkable
class RoundTrips(Protocol):
  """Optional: export modes whose function another framework makes (TensorFlow runs
  ``jax2tf``); the checker, which loads every backend, adds them."""

  def add_round_trip(self, mode: str, function: Callable[[OpDef, dict], Callable[..., Any]],
                     precision_scope: Callable[[Sequence[Any]], Any]) -> None:
    """Lets `evaluate` and `evaluate_higher_order` take ``mode``, running
    ``function(op, params)`` inside ``precision_scope(inputs)``."""


@runtime_checkable
class ScaledKernels(Protocol):
  """Optional: a registered kernel with its own differentiation rule scaled, which the
  cross-check's ``custom_rule`` rows run to see that each mode uses the rule."""

  def scaled_kernel(self, fn: Callable[..., Any], factor: float) -> Callable[..., Any] | None:
    """``fn`` with its custom rule (`jax.custom_vjp`, `torch.autograd.Function`, reached
    from ``fn``) returning ``factor`` times its cotangents; None where none is reachable."""


MEMBERS = ("NAME", "VERSION", "MODES", "xp", "get", "spec_of", "devices", "evaluate",
           "precision_scope", "register_container")

@dataclasses.dataclass(frozen=True)
class Capabilities:
  """A backend's optional members, each with its default: what a backend without the
  member has. Member names are the fields' in upper case (constants) or as they are
  (methods, None where absent)."""

  EXTRA_MODES: tuple[str, ...] = ()
  TRANSFORMS: tuple[str, ...] = ()
  EXTRA_TRANSFORMS: tuple[str, ...] = ()
  UNSUPPORTED_CHECKS: Mapping[tuple[str, str], str] = dataclasses.field(default_factory=dict)
  CONJUGATE_COMPLEX_GRADIENTS: bool = False
  NARROWED_INTEGERS: bool = False
  ARRAY_MODULES: tuple[str, ...] = ()
  # Memory layouts `evaluate` gives its inputs and cotangents (``layout=``), beyond the
  # default contiguous one: "strided", non-contiguous views holding the same values.
  LAYOUTS: tuple[str, ...] = ()
  evaluate_higher_order: Callable[..., Any] | None = None
  evaluate_transformed: Callable[..., Any] | None = None
  add_round_trip: Callable[..., Any] | None = None
  set_cpu_device_count: Callable[[int], int] | None = None
  enable_compile_cache: Callable[[str], None] | None = None
  compile_cache_stats: Callable[[], dict[str, int]] | None = None
  warm_up: Callable[[Sequence[str]], None] | None = None
  scaled_kernel: Callable[[Callable[..., Any], float], Any] | None = None


OPTIONAL_MEMBERS = tuple(f.name for f in dataclasses.fields(Capabilities))


def capabilities(backend: Any) -> Capabilities:
  """``backend``'s optional members, the defaults of `Capabilities` for those it lacks."""
  return Capabilities(**{name: getattr(backend, name) for name in OPTIONAL_MEMBERS
                         if hasattr(backend, name)})
