"""Where ``array_api_compat.torch`` breaks under torch's transforms: crossgrad's fixes.

``crossgrad.torch.xp`` is array_api_compat's namespace for torch but for the functions here,
which keep the standard's rules (https://data-apis.org/array-api/2024.12/) and also run under
``torch.compile(fullgraph=True)`` and ``torch.func.vmap``:

- ``result_type`` and every binary elementwise function with a Python scalar: the scalar takes
  the array's dtype when its kind (bool < int < float < complex) is not above the array's,
  else torch's default of its kind promoted with the array's dtype. array_api_compat asks
  ``torch.result_type``, which Dynamo refuses ("torch.* op returned non-Tensor"); here the
  dtype is decided in Python (``torch.promote_types``), and the scalar becomes a tensor of
  that dtype (so ``maximum(0.5, x)`` and ``logaddexp(x, 0.0)`` work in every mode).
- ``remainder`` of floats: a zero result has ``x2``'s sign, as Python's ``%``.
- ``sign``: NaN stays NaN (``maximum`` with ``min(x, -1)``, no mask), complex ``x / |x|``
  with ``sign(0) = 0`` by ``where`` (array_api_compat assigns through a boolean mask, which
  vmap refuses and which is slow).
- ``take_along_axis``, ``searchsorted``'s ``sorter``, ``repeat``'s ``repeats``: indices of
  any integer dtype (torch wants int64: "dtype of indices should be Long but got Int").
- ``result_type`` of two integer dtypes: the standard's table also for uint16/32/64.
- ``__array_namespace_info__().devices()``: a list, as 2024.12 asks.
- ``finfo``, ``iinfo``: ``dtype`` is the torch dtype (array_api_compat: its name), finfo's
  numbers Python floats and its dtype the real one.
"""

from __future__ import annotations

import dataclasses
import functools
import types

import array_api_compat.torch as compat
import numpy as np
import torch

from crossgrad.registry import numpy_like

_KINDS = (bool, int, float, complex)


def _kind(dtype: torch.dtype) -> type:
  if dtype.is_complex:
    return complex
  if dtype.is_floating_point:
    return float
  return bool if dtype == torch.bool else int


def _default(kind: type, like: torch.dtype) -> torch.dtype:
  """torch's dtype for a Python scalar of ``kind`` (complex matching ``like``'s precision)."""
  if kind is complex:
    return torch.complex128 if like == torch.float64 else torch.complex64
  return {bool: torch.bool, int: torch.int64, float: torch.get_default_dtype()}[kind]


def _with_scalar(dtype: torch.dtype, scalar) -> torch.dtype:
  kind = type(scalar) if type(scalar) in _KINDS else float
  if _KINDS.index(kind) <= _KINDS.index(_kind(dtype)):
    return dtype
  return torch.promote_types(dtype, _default(kind, dtype))


def result_type(*arrays_and_dtypes):
  """The standard's promotion, decided in Python (traceable by Dynamo)."""
  scalars = [a for a in arrays_and_dtypes if isinstance(a, _KINDS)]
  dtypes = [a if isinstance(a, torch.dtype) else a.dtype
            for a in arrays_and_dtypes if not isinstance(a, _KINDS)]
  if not dtypes:
    raise ValueError("result_type needs at least one array or dtype")
  out = functools.reduce(_promote, dtypes)
  return functools.reduce(_with_scalar, scalars, out)


def _promote(a: torch.dtype, b: torch.dtype) -> torch.dtype:
  """torch's promotion, but integers by the standard's table (NumPy's), which torch lacks for
  uint16, uint32 and uint64."""
  if _kind(a) in (bool, int) and _kind(b) in (bool, int) and a != b:
    name = np.result_type(str(a).removeprefix("torch."), str(b).removeprefix("torch.")).name
    return getattr(torch, name)
  return torch.promote_types(a, b)


def _binary(f):
  """``f`` with a Python scalar on either side made a tensor of the standard's dtype."""

  def call(x1, x2, /, **kwargs):
    if isinstance(x1, _KINDS) and isinstance(x2, torch.Tensor):
      x1 = torch.tensor(x1, dtype=result_type(x2, x1), device=x2.device)
    elif isinstance(x2, _KINDS) and isinstance(x1, torch.Tensor):
      x2 = torch.tensor(x2, dtype=result_type(x1, x2), device=x1.device)
    return f(x1, x2, **kwargs)

  call.__name__ = call.__qualname__ = f.__name__
  call.__doc__ = f.__doc__
  return call


BINARY = ("add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or",
          "bitwise_right_shift", "bitwise_xor", "copysign", "divide", "equal", "floor_divide",
          "greater", "greater_equal", "hypot", "less", "less_equal", "logaddexp",
          "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
          "nextafter", "not_equal", "pow", "remainder", "subtract")


_torch_remainder = _binary(compat.remainder)


def remainder(x1, x2, /):
  """A zero result has ``x2``'s sign (Python's ``%``; torch's keeps ``x1``'s)."""
  out = _torch_remainder(x1, x2)
  if not out.dtype.is_floating_point:
    return out
  divisor = x2 if isinstance(x2, torch.Tensor) else torch.tensor(x2, dtype=out.dtype)
  return torch.where(out == 0, torch.copysign(torch.zeros_like(out), divisor), out)


def sign(x, /):
  """The standard's sign: torch's for real numbers (+0 for both zeros) but NaN for NaN
  (torch: 0). For floats that is one ``maximum`` with ``min(x, -1)``, which is NaN for NaN
  and never above the sign otherwise: two float kernels, where a NaN mask and ``where``
  would cost two kernels with a boolean tensor (several times slower on CPU); no gradient
  flows through the added branch."""
  if x.dtype.is_complex:
    return torch.where(x == 0, torch.zeros_like(x), x / torch.abs(x))
  out = torch.sign(x)
  if not x.dtype.is_floating_point:
    return out
  return torch.maximum(out, torch.clamp(x.detach(), max=-1))


def _long(indices):
  return indices if indices.dtype == torch.int64 else indices.to(torch.int64)


def take_along_axis(x, indices, /, *, axis=-1):
  return compat.take_along_axis(x, _long(indices), axis=axis)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
  sorter = None if sorter is None else _long(sorter)
  return compat.searchsorted(x1, x2, side=side, sorter=sorter)


def repeat(x, repeats, /, *, axis=None):
  if isinstance(repeats, torch.Tensor):
    repeats = _long(repeats)
  return compat.repeat(x, repeats, axis=axis)


def _dtype_of(type_):
  return type_.dtype if isinstance(type_, torch.Tensor) else type_


@dataclasses.dataclass(frozen=True)
class IInfo:
  """The standard's ``iinfo`` object."""

  bits: int
  max: int
  min: int
  dtype: torch.dtype


def finfo(type, /):  # pylint: disable=redefined-builtin
  dtype = _dtype_of(type)
  info = torch.finfo(dtype)
  real = {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)
  return numpy_like.FInfo(int(info.bits), float(info.eps), float(info.max), float(info.min),
                          float(info.smallest_normal), real)


def iinfo(type, /):  # pylint: disable=redefined-builtin
  dtype = _dtype_of(type)
  info = torch.iinfo(dtype)
  return IInfo(int(info.bits), int(info.max), int(info.min), dtype)


def __array_namespace_info__():  # pylint: disable=invalid-name
  """array_api_compat's, with ``devices()`` a list (2024.12; a tuple from 2025.12)."""
  info = compat.__array_namespace_info__()
  return types.SimpleNamespace(
      capabilities=info.capabilities, default_device=info.default_device,
      default_dtypes=info.default_dtypes, dtypes=info.dtypes,
      devices=lambda: list(info.devices()))


FIXES = {
    "__array_namespace_info__": __array_namespace_info__, "remainder": remainder,
    "finfo": finfo, "iinfo": iinfo,
    "result_type": result_type, "sign": sign, "take_along_axis": take_along_axis,
    "searchsorted": searchsorted, "repeat": repeat,
    **{name: _binary(getattr(compat, name)) for name in BINARY if name != "remainder"},
}
