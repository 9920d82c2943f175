"""crossgrad's extensions written once for the libraries with NumPy's API (NumPy, jax.numpy),
and the standard's ``finfo`` object, which both libraries give with NumPy scalars.

Each function takes the array module first; backends bind it. Nothing here imports a
framework.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from crossgrad.registry import broadcasting, namespace


def unbroadcast(np_like: Any, x, like, /):
  """Sums ``x`` down to ``like``'s shape, undoing broadcasting (gradients of broadcast inputs)."""
  x, shape = np_like.asarray(x), np_like.shape(like)
  axes = broadcasting.sum_axes(x.shape, shape)
  # A sum over no axes is not the identity in NumPy: it turns -0.0 into 0.0.
  return np_like.reshape(np_like.sum(x, axis=axes) if axes else x, shape)


def take(np_like: Any, backend: str, x, indices, /, *, axis=None):
  """``take`` under crossgrad's bad-index rule: zeros outside [0, n), never an error or NaN."""
  x, indices = np_like.asarray(x), np_like.asarray(indices)
  axis = namespace.take_axis(backend, x.ndim, axis)
  if x.shape[axis] == 0:  # Every index is outside [0, 0): zeros, where NumPy and JAX raise.
    return np_like.zeros(x.shape[:axis] + indices.shape + x.shape[axis + 1:], x.dtype)
  valid = (indices >= 0) & (indices < x.shape[axis])
  picked = np_like.take(x, np_like.where(valid, indices, 0), axis=axis, mode="clip")
  mask = np_like.reshape(valid, (1,) * axis + valid.shape + (1,) * (x.ndim - axis - 1))
  return np_like.where(mask, picked, np_like.zeros((), x.dtype))


@dataclasses.dataclass(frozen=True)
class FInfo:
  """The standard's ``finfo`` object: Python numbers and the real floating-point dtype."""

  bits: int
  eps: float
  max: float
  min: float
  smallest_normal: float
  dtype: Any


def finfo(library_finfo: Callable[[Any], Any], type_, /) -> FInfo:
  """``library_finfo(type_)`` (NumPy's or JAX's ``finfo``) as the standard's object."""
  info = library_finfo(type_)
  return FInfo(int(info.bits), float(info.eps), float(info.max), float(info.min),
               float(info.smallest_normal), info.dtype)
