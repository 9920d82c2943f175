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
- ``remainder`` of floats: a zero result has ``x2``'s sign, as Python's ``%``;
  ``floor_divide`` with an infinite operand: ``floor(x1 / x2)`` (torch's gives NaN and -1).
- complex ``expm1``, ``log1p``, ``tanh`` and ``acos``: the standard's values at infinities and
  zeros.
- ``sign``: NaN stays NaN (``maximum`` with ``min(x, -1)``, no mask), complex ``x / |x|``
  with ``sign(0) = 0`` by ``where`` (array_api_compat assigns through a boolean mask, which
  vmap refuses and which is slow).
- ``take_along_axis``, ``searchsorted``'s ``sorter``, ``repeat``'s ``repeats``: indices of
  any integer dtype (torch wants int64: "dtype of indices should be Long but got Int").
- ``result_type`` of two integer dtypes: the standard's table also for uint16/32/64.
- ``cumulative_sum``, ``cumulative_prod``: by torch's ``cumsum``/``cumprod`` and ``cat``
  (array_api_compat's look up a namespace in a cache, which Dynamo warns about).
- ``sum``, ``prod``, ``cumulative_sum``, ``cumulative_prod`` of unsigned integers: uint64
  (torch gives int64, and has no uint16/32/64 kernels: those reduce in int64, whose bits wrap
  alike); of signed integers the default integer dtype, int64 (as torch gives).
- ``matmul``, ``vecdot``, ``tensordot`` of integers: the standard's promotion, in int64 where
  torch has no uint16/32/64 kernel or no promotion of the pair.
- ``var``, ``std``: a fractional ``correction`` too.
- ``squeeze`` without sorting its axes, ``asarray`` of a list holding tensors by stacking
  (both break ``torch.compile``), ``meshgrid`` and ``broadcast_arrays`` returning lists.
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


_BOOL_AND_INTEGERS = (torch.bool, torch.int8, torch.int16, torch.int32, torch.int64,
                      torch.uint8, torch.uint16, torch.uint32, torch.uint64)
# The standard's table (NumPy's) for two different bool or integer dtypes, which torch lacks
# for uint16, uint32 and uint64; made here once, as Dynamo cannot trace np.result_type.
_INTEGER_PROMOTION = {
    (a, b): getattr(torch, np.result_type(str(a).removeprefix("torch."),
                                          str(b).removeprefix("torch.")).name)
    for a in _BOOL_AND_INTEGERS for b in _BOOL_AND_INTEGERS if a != b}


def _promote(a: torch.dtype, b: torch.dtype) -> torch.dtype:
  """torch's promotion, but integers by the standard's table."""
  return _INTEGER_PROMOTION.get((a, b)) or torch.promote_types(a, b)


def _one_dtype(x1, x2) -> bool:
  """Two tensors of one dtype: where array_api_compat's promotion fix changes nothing."""
  return isinstance(x1, torch.Tensor) and isinstance(x2, torch.Tensor) and x1.dtype == x2.dtype


def _binary(f):
  """``f`` with a Python scalar on either side made a tensor of the standard's dtype.

  Two tensors of one dtype go straight to the torch function ``f`` wraps (array_api_compat's
  ``_two_arg`` keeps it as ``__wrapped__``): its promotion fix is a no-op there, and costs
  more than a small kernel eagerly and a guard on its dtype set under ``torch.compile``."""
  same = f.__wrapped__

  def call(x1, x2, /, **kwargs):
    if _one_dtype(x1, x2):
      return same(x1, x2, **kwargs)
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


_torch_floor_divide = _binary(compat.floor_divide)


def floor_divide(x1, x2, /):
  """With an infinite operand, ``floor(x1 / x2)``: +-infinity, or a zero signed as the
  quotient, as the standard says (torch's gives NaN and -1). Piecewise constant, so it is
  computed from detached inputs: its derivative is zero, as in JAX and TensorFlow (torch
  implements none for floor_divide, and differentiating through it raised)."""
  x1, x2 = (x.detach() if isinstance(x, torch.Tensor) else x for x in (x1, x2))
  out = _torch_floor_divide(x1, x2)
  if not out.dtype.is_floating_point:
    return out
  x1, x2 = (x if isinstance(x, torch.Tensor) else torch.tensor(x, dtype=out.dtype)
            for x in (x1, x2))
  return torch.where(torch.isinf(x1) | torch.isinf(x2), torch.floor(x1 / x2), out)


def expm1(x, /):
  """Complex: ``exp(x) - 1`` where a part is not finite (torch's expm1 gives NaN there; exp
  has the standard's special values, and subtracting 1 keeps them)."""
  if not x.dtype.is_complex:
    return torch.expm1(x)
  out = torch.where(torch.isfinite(x), torch.expm1(x), torch.exp(x) - 1)
  return torch.where(x == 0, torch.complex(torch.zeros_like(x.real), x.imag), out)  # +0 + 0j.


def log1p(x, /):
  """Complex: ``log(1 + x)`` where a part is infinite (torch's log1p gives NaN there)."""
  if not x.dtype.is_complex:
    return torch.log1p(x)
  return torch.where(torch.isinf(x), torch.log(1 + x), torch.log1p(x))


def tanh(x, /):
  """Complex: ``tanh(+-inf + yj)`` is ``+-1 + 0j`` (imaginary part signed as y) for finite y,
  as the standard says (torch's vectorised kernel signs it as sin(2y))."""
  out = torch.tanh(x)
  if not x.dtype.is_complex:
    return out
  limit = torch.isinf(x.real) & torch.isfinite(x.imag)
  return torch.where(limit, torch.complex(torch.sign(x.real), 0 * torch.sign(x.imag)), out)


def acos(x, /):
  """Complex: ``acos(+-0 + 0j)`` is ``pi/2 - 0j`` (conjugated for ``-0j``); torch's ``+0j``."""
  out = torch.acos(x)
  if not x.dtype.is_complex:
    return out
  return torch.where(x == 0, torch.complex(torch.real(out), -torch.imag(x)), out)


def sign(x, /):
  """The standard's sign: torch's for real numbers (+0 for both zeros) but NaN for NaN
  (torch: 0). For floats that is one ``maximum`` with ``min(x, -1)``, which is NaN for NaN
  and never above the sign otherwise: two float kernels, where a NaN mask and ``where``
  would cost two kernels with a boolean tensor (several times slower on CPU); no gradient
  flows through the added branch.

  Eagerly on CPU it is one kernel: ``clamp(sign, min=x, max=sign)`` is the sign where x is
  a number (the tie at +-0 resolves to the sign's +0 in ATen's scalar and vector paths
  alike) and NaN where x is (ATen's clamp propagates a NaN bound). It writes over the
  fresh sign (at 16M elements a second buffer costs as much as the kernel) unless autograd
  records it or a torch.func transform runs (vmap has no rule for ``clamp_``). Compiled
  and on other devices, whose min/max may resolve that tie otherwise, two kernels stay."""
  if x.dtype.is_complex:
    return torch.where(x == 0, torch.zeros_like(x), x / torch.abs(x))
  out = torch.sign(x)
  if not x.dtype.is_floating_point:
    return out
  if x.is_cpu and not torch.compiler.is_compiling():
    transformed = torch._C._are_functorch_transforms_active()  # pylint: disable=protected-access
    if out.requires_grad or transformed:
      return torch.clamp(out, min=x.detach(), max=out)
    return out.clamp_(min=x.detach(), max=out)
  return torch.maximum(out, torch.clamp(x.detach(), max=-1))


def _weak_scalar(x1, x2) -> bool:
  """A Python float or int on one side, a floating or complex tensor on the other: torch
  gives the tensor's dtype, as the standard does (what array_api_compat's fix leaves)."""
  for scalar, tensor in ((x1, x2), (x2, x1)):
    if type(scalar) in (float, int) and isinstance(tensor, torch.Tensor):
      return tensor.is_floating_point() or tensor.is_complex()
  return False


def where(condition, x1, x2, /):
  """``torch.where`` for two tensors of one dtype or a tensor and a `_weak_scalar`
  (array_api_compat's promotion fix, a no-op there, costs more than a small kernel);
  array_api_compat's ``where`` otherwise."""
  if _one_dtype(x1, x2) or _weak_scalar(x1, x2):
    return torch.where(condition, x1, x2)
  return compat.where(condition, x1, x2)


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


_UNSIGNED = (torch.uint8, torch.uint16, torch.uint32, torch.uint64)
_NO_KERNELS = (torch.uint16, torch.uint32, torch.uint64)  # No CPU sum/prod/cumsum kernels.


def _unsigned_sums(f):
  """``f`` (sum, prod, cumulative_sum, cumulative_prod) with the standard's dtype for unsigned
  input (uint64, where torch gives int64), computed in int64 where torch has no kernel: the
  bits wrap alike."""

  @functools.wraps(f)  # f's signature (inspect.signature follows __wrapped__).
  def call(x, /, *, dtype=None, **kwargs):
    if dtype is None and x.dtype in _UNSIGNED:
      dtype = torch.uint64
    if dtype not in _NO_KERNELS and x.dtype not in _NO_KERNELS:
      return f(x, dtype=dtype, **kwargs)
    wide = x.view(torch.int64) if x.dtype == torch.uint64 else x.to(torch.int64)
    out = f(wide, dtype=torch.int64, **kwargs)
    return out.view(torch.uint64) if dtype == torch.uint64 else out.to(dtype or x.dtype)

  return call


def _cumulative(scan, initial):
  """``cumulative_sum`` (``scan`` torch.cumsum, ``initial`` 0) or ``cumulative_prod``
  (torch.cumprod, 1). array_api_compat's asks ``array_namespace`` for the initial element, a
  cached lookup Dynamo warns about under torch.compile."""
  @functools.wraps(scan)
  def cumulative(x, /, *, axis=None, dtype=None, include_initial=False):
    if axis is None:
      if x.ndim > 1:
        raise ValueError("axis must be given for an array of more than one dimension")
      axis = 0
    out = scan(x, dim=axis, dtype=dtype)
    if not include_initial:
      return out
    shape = list(out.shape)
    shape[axis] = 1
    return torch.cat([torch.full(shape, initial, dtype=out.dtype, device=out.device), out],
                     dim=axis)
  return cumulative


def _carried(t: torch.Tensor) -> torch.Tensor:
  return t.view(torch.int64) if t.dtype == torch.uint64 else t.to(torch.int64)


def _integer_products(f, same_dtype=None):
  """``f`` (matmul, vecdot, tensordot) of integer arrays by the standard's promotion, in int64
  where torch has no kernel for the result (uint16/32/64) or cannot promote the pair: the bits
  of sums of products wrap alike. ``same_dtype``: what ``f`` comes to for two arrays of one
  dtype, called directly (`torch.matmul` for matmul: array_api_compat's promotion, a no-op
  there, costs more than a small matmul)."""
  same = same_dtype or f

  @functools.wraps(f)
  def call(x1, x2, /, **kwargs):
    if x1.dtype == x2.dtype and x1.dtype not in _NO_KERNELS:
      return same(x1, x2, **kwargs)
    dtypes = (x1.dtype, x2.dtype)
    if any(_kind(d) not in (bool, int) for d in dtypes):
      return f(x1, x2, **kwargs)
    out = _promote(*dtypes)
    result = f(_carried(x1), _carried(x2), **kwargs)
    return result.view(torch.uint64) if out == torch.uint64 else result.to(out)

  return call


def _fractional_correction(f, root):
  """``f`` (var or std) also for a fractional ``correction`` (array_api_compat raises)."""

  def call(x, /, *, axis=None, correction=0.0, keepdims=False):
    if float(correction).is_integer():
      return f(x, axis=axis, correction=int(correction), keepdims=keepdims)
    if axis == ():  # No axis reduced: one value each (torch reads dim=() as every axis).
      out = torch.abs(x - x) ** 2 / (1 - correction)
      return torch.sqrt(out) if root else out
    dims = tuple(range(x.ndim)) if axis is None else axis
    mean = torch.mean(x, dim=dims, keepdim=True)
    n = x.numel() // max(mean.numel(), 1) if x.ndim else 1
    out = torch.sum(torch.abs(x - mean) ** 2, dim=dims, keepdim=keepdims) / (n - correction)
    return torch.sqrt(out) if root else out

  call.__name__ = call.__qualname__ = f.__name__
  call.__doc__ = f.__doc__
  return call


def squeeze(x, /, axis):
  """Without array_api_compat's sort of the axes, which Dynamo refuses."""
  axes = (axis,) if isinstance(axis, int) else tuple(axis)
  for a in axes:
    if not -x.ndim <= a < max(x.ndim, 1):
      raise IndexError(f"squeeze: axis {a} is out of range for {x.ndim} dimensions")
    if x.shape[a] != 1:
      raise ValueError("squeezed dimensions must be equal to 1")
  return torch.squeeze(x, tuple(a % x.ndim for a in axes)) if axes else x


def _has_tensor(obj) -> bool:
  return isinstance(obj, torch.Tensor) or isinstance(obj, (list, tuple)) and any(
      _has_tensor(o) for o in obj)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
  """A nested list holding tensors is stacked (torch.asarray of it fails under
  torch.compile); anything else as array_api_compat has it."""
  if isinstance(obj, (list, tuple)) and _has_tensor(obj):
    parts = [asarray(o, device=device) for o in obj]
    common = functools.reduce(_promote, [p.dtype for p in parts])
    out = torch.stack([p.to(common) for p in parts])
    return out if dtype is None else out.to(dtype)
  return compat.asarray(obj, dtype=dtype, device=device, copy=copy)


def meshgrid(*arrays, indexing="xy"):
  return list(compat.meshgrid(*arrays, indexing=indexing))  # The standard's list.


def broadcast_arrays(*arrays):
  return list(compat.broadcast_arrays(*arrays))


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
    "floor_divide": floor_divide, "expm1": expm1, "log1p": log1p, "acos": acos,
    "tanh": tanh,
    "finfo": finfo, "iinfo": iinfo,
    "result_type": result_type, "sign": sign, "where": where,
    "take_along_axis": take_along_axis,
    "searchsorted": searchsorted, "repeat": repeat, "squeeze": squeeze, "asarray": asarray,
    "meshgrid": meshgrid, "broadcast_arrays": broadcast_arrays,
    "var": _fractional_correction(compat.var, root=False),
    "std": _fractional_correction(compat.std, root=True),
    **{name: _unsigned_sums(getattr(compat, name)) for name in ("sum", "prod")},
    "cumulative_sum": _unsigned_sums(_cumulative(torch.cumsum, 0)),
    "cumulative_prod": _unsigned_sums(_cumulative(torch.cumprod, 1)),
    "matmul": _integer_products(compat.matmul, same_dtype=torch.matmul),
    **{name: _integer_products(getattr(compat, name)) for name in ("vecdot", "tensordot")},
    **{name: _binary(getattr(compat, name)) for name in BINARY
       if name not in ("remainder", "floor_divide")},
}
