"""Checks shared by every backend: inputs at call time, forward results, backward results.

Backends describe arrays as `ArraySpec`s (static shape, dtype name) so that the same
checks, and the same messages, apply in NumPy, TensorFlow and JAX, at trace time.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

FLOATING = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")  # For ops declaring OpDef(allow_complex=True).


@dataclasses.dataclass(frozen=True)
class ArraySpec:
  """Static shape and dtype name of an array.

  A dimension is ``None`` where unknown at trace time; ``shape`` is ``None`` where even
  the rank is unknown.
  """

  shape: tuple[int | None, ...] | None
  dtype: str

  @property
  def is_floating(self) -> bool:
    return self.dtype in FLOATING

  @property
  def is_complex(self) -> bool:
    return self.dtype in COMPLEX

  @property
  def is_inexact(self) -> bool:
    """Floating or complex: an array that carries a gradient."""
    return self.dtype in FLOATING or self.dtype in COMPLEX

  def __str__(self) -> str:
    if self.shape is None:
      return f"{self.dtype}[...]"
    dims = ", ".join("?" if d is None else str(d) for d in self.shape)
    return f"{self.dtype}[{dims}]"


def shapes_compatible(a: Sequence[int | None] | None, b: Sequence[int | None] | None) -> bool:
  """Equal shapes, where unknown dimensions (or an unknown rank) match anything."""
  if a is None or b is None:
    return True
  return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def as_tuple(outputs: Any) -> tuple[Any, ...]:
  """The op's outputs as a tuple (a single array becomes a 1-tuple)."""
  return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def check_input_count(op: OpDef, backend: str, inputs: Sequence[Any]):
  if len(inputs) != len(op.input_names):
    raise CrossgradError(
        "wrong number of inputs", op=op.name, backend=backend, argument="inputs",
        expected=f"{len(op.input_names)} ({', '.join(op.input_names)})", actual=len(inputs))


def check_inputs(op: OpDef, backend: str, specs: Sequence[ArraySpec], params: dict):
  """Differentiable inputs must be floating (or complex, where the op allows it); then the
  op's own `check_inputs`."""
  allowed = FLOATING + COMPLEX if op.allow_complex else FLOATING
  for i in op.diff_argnums:
    if specs[i].dtype not in allowed:
      complex_hint = (" A complex input needs OpDef(allow_complex=True) and a backward in "
                      "JAX's convention (docs/dtypes.md)." if specs[i].is_complex else "")
      raise CrossgradError(
          "a differentiable input must be floating", op=op.name, backend=backend,
          argument=f"input '{op.input_names[i]}'", expected=" or ".join(allowed),
          actual=specs[i].dtype,
          hint="Cast it, or list it in OpDef(nondiff=...) if it carries no gradient."
               + complex_hint)
  if op.check_inputs is not None:
    try:
      op.check_inputs(dict(zip(op.input_names, specs)), **params)
    except CrossgradError as e:
      raise e.located(op=op.name, backend=backend) from None


def check_values(op: OpDef, backend: str, xp: Any, inputs: Sequence[Any], params: dict):
  """The op's own `check_values` of the call's inputs, its error naming op and backend."""
  try:
    op.check_values(xp, *inputs, **params)
  except CrossgradError as e:
    raise e.located(op=op.name, backend=backend) from None


def check_forward_result(op: OpDef, backend: str, result: Any) -> tuple[Any, Any]:
  if not (isinstance(result, tuple) and len(result) == 2):
    raise CrossgradError(
        "forward must return (outputs, residuals)", op=op.name, backend=backend,
        argument="forward", expected="a 2-tuple", actual=_describe(result))
  return result


def check_output_dtypes(op: OpDef, backend: str, input_specs: Sequence[ArraySpec],
                        output_specs: Sequence[ArraySpec]):
  """The forward's floating outputs have its floating inputs' dtype (where they share one),
  unless the op has a static ``dtype`` parameter (a cast chooses its output dtype).

  A forward that changes it is at fault there, not in its backward: e.g. NumPy makes
  float64 of ``xp.where(c, 1.0, -1.0)`` whatever the inputs' dtype.
  """
  floating = {spec.dtype for spec in input_specs if spec.is_floating}
  if len(floating) != 1 or "dtype" in op.param_defaults:  # A `dtype` parameter chooses it.
    return
  (dtype,) = floating
  for i, spec in enumerate(output_specs):
    if spec.is_floating and spec.dtype != dtype:
      raise CrossgradError(
          "the forward's output has another dtype than its floating inputs", op=op.name,
          backend=backend, argument=f"forward output {i}", expected=dtype, actual=str(spec),
          hint="Where only Python scalars meet (xp.where(c, 1.0, -1.0)) NumPy makes float64: "
               "use arrays of the input's dtype (xp.ones_like(x)) or xp.astype(..., x.dtype)")


def cotangent_for(op: OpDef, output_specs: Sequence[ArraySpec], upstream: Sequence[Any],
                  zeros_like, single: bool):
  """The ``g`` handed to backward: floating and complex outputs get a cotangent, integer
  ones None."""
  g = tuple(
      (u if u is not None else zeros_like(i)) if spec.is_inexact else None
      for i, (spec, u) in enumerate(zip(output_specs, upstream)))
  return g[0] if single else g


def check_cotangents(op: OpDef, backend: str, input_specs: Sequence[ArraySpec],
                     cotangents: Any, spec_of) -> tuple[Any, ...]:
  """Validates backward's result against the inputs: count, None-ness, shape, dtype."""
  n = len(op.input_names)
  if not isinstance(cotangents, (tuple, list)):
    if n == 1 and cotangents is not None:
      cotangents = (cotangents,)
    else:
      raise CrossgradError(
          "backward must return one cotangent per input", op=op.name, backend=backend,
          argument="backward", expected=f"a tuple of {n} ({', '.join(op.input_names)})",
          actual=_describe(cotangents))
  if len(cotangents) != n:
    raise CrossgradError(
        "backward returned the wrong number of cotangents", op=op.name, backend=backend,
        argument="backward", expected=f"{n} ({', '.join(op.input_names)})",
        actual=len(cotangents))
  for i, (name, spec, ct) in enumerate(zip(op.input_names, input_specs, cotangents)):
    where = f"cotangent for input '{name}'"
    if i in op.nondiff_argnums:
      if ct is not None:
        raise CrossgradError(
            "non-differentiable input gets no cotangent", op=op.name, backend=backend,
            argument=where, actual=_describe(ct),
            hint="Return None for it (it is listed in OpDef(nondiff=...))")
      continue
    if ct is None:
      raise CrossgradError(
          "missing cotangent", op=op.name, backend=backend, argument=where,
          expected=str(spec), actual="None",
          hint="Return xp.zeros_like(input) for a zero cotangent, or list the input in "
               "OpDef(nondiff=...)")
    ct_spec = spec_of(ct)
    if not shapes_compatible(ct_spec.shape, spec.shape):
      raise CrossgradError("cotangent shape differs from the input's", op=op.name,
                           backend=backend, argument=where, expected=str(spec),
                           actual=str(ct_spec))
    if ct_spec.dtype != spec.dtype:
      raise CrossgradError("cotangent dtype differs from the input's", op=op.name,
                           backend=backend, argument=where, expected=str(spec),
                           actual=str(ct_spec))
  return tuple(cotangents)


_VALUE_READERS: list[Callable[[Any], Any]] = []


def register_value_reader(reader: Callable[[Any], Any]) -> None:
  """Lets a backend read its own arrays for `concrete_values`: ``reader(x)`` returns NumPy
  values, None while ``x`` is traced, or NotImplemented for an array it does not own."""
  if reader not in _VALUE_READERS:
    _VALUE_READERS.append(reader)


def concrete_values(x: Any):
  """``x`` as a NumPy array where its values are known here, None while it is traced
  (``jax.jit``, ``tf.function``, ``torch.compile``): for checks of values, which only
  eager code can make."""
  for reader in _VALUE_READERS:
    values = reader(x)
    if values is not NotImplemented:
      return values
  try:
    return np.asarray(x)
  except (TypeError, NotImplementedError):  # A jax tracer or a symbolic tf.Tensor.
    return None


_BOUNDS_READERS: list[Callable[[Any], Any]] = []


def register_bounds_reader(reader: Callable[[Any], Any]) -> None:
  """Lets a backend find the bounds of its own arrays for `concrete_bounds` without NumPy:
  ``reader(x)`` returns them as `concrete_bounds` does, or NotImplemented where it leaves
  ``x`` to NumPy (an array it does not own, a dtype it does not reduce)."""
  if reader not in _BOUNDS_READERS:
    _BOUNDS_READERS.append(reader)


def concrete_bounds(x: Any) -> tuple[Any, Any] | None:
  """``(min, max)`` of ``x``'s values as Python numbers (NaN if any is NaN) where they are
  known here; None while ``x`` is traced, as `concrete_values`, or when it is empty.

  For range checks on every eager call: a backend may reduce in the framework
  (`register_bounds_reader`), which spares its eager step a round trip through NumPy (a
  NumPy reduction between torch kernels is a large part of a small eager torch step)."""
  for reader in _BOUNDS_READERS:
    bounds = reader(x)
    if bounds is not NotImplemented:
      return bounds
  values = concrete_values(x)
  if values is None or values.size == 0:
    return None
  return values.min().item(), values.max().item()


def require_same_spec(specs: dict[str, ArraySpec], *names: str):
  """For ops whose inputs must agree: each of ``names`` has the first one's spec."""
  first = specs[names[0]]
  for name in names[1:]:
    spec = specs[name]
    if spec.dtype != first.dtype or not shapes_compatible(spec.shape, first.shape):
      raise CrossgradError(f"input must match input '{names[0]}'", argument=f"input '{name}'",
                           expected=str(first), actual=str(spec))


def _describe(value: Any) -> str:
  if isinstance(value, (tuple, list)):
    return f"{type(value).__name__} of {len(value)}"
  return type(value).__name__
