"""Namespace functions written once for the backends with NumPy's own API.

`table(module)` builds a backend's whole table: the functions below (each taking the
array module first), then the module's own functions of the documented names. Nothing
here imports a framework.
"""

from __future__ import annotations

import functools
from typing import Any

from crossgrad.registry import broadcasting
from crossgrad.registry.namespace import FUNCTIONS


def clip(np_like: Any, x, lo, hi):
  """``np.clip`` where either bound may be None (no bound: x unchanged)."""
  return np_like.clip(x, lo, hi) if (lo is not None or hi is not None) else np_like.asarray(x)


def unbroadcast(np_like: Any, x, like):
  """Sums ``x`` down to ``like``'s shape, undoing broadcasting (gradients of broadcast inputs)."""
  x, shape = np_like.asarray(x), np_like.shape(like)
  axes = broadcasting.sum_axes(x.shape, shape)
  # A sum over no axes is not the identity in NumPy: it turns -0.0 into 0.0.
  return np_like.reshape(np_like.sum(x, axis=axes) if axes else x, shape)


def take(np_like: Any, x, indices, axis=0):
  """``take`` under crossgrad's bad-index rule: zeros outside [0, n), never an error or NaN."""
  x, indices = np_like.asarray(x), np_like.asarray(indices)
  axis %= x.ndim
  valid = (indices >= 0) & (indices < x.shape[axis])
  picked = np_like.take(x, np_like.where(valid, indices, 0), axis=axis, mode="clip")
  mask = valid.reshape((1,) * axis + valid.shape + (1,) * (x.ndim - axis - 1))
  return np_like.where(mask, picked, np_like.zeros((), x.dtype))


def astype(np_like: Any, x, dtype):
  return np_like.asarray(x).astype(dtype)


def arange(np_like: Any, n, dtype):
  return np_like.arange(n, dtype=dtype)


def cumsum(np_like: Any, x, axis):
  """Cumulative sum that keeps ``x``'s dtype (NumPy widens small integers)."""
  return np_like.cumsum(x, axis=axis, dtype=np_like.asarray(x).dtype)


_WRITTEN_HERE = {"clip": clip, "unbroadcast": unbroadcast, "take": take, "astype": astype,
                 "arange": arange, "cumsum": cumsum}


def table(np_like: Any, **own: Any) -> dict[str, Any]:
  """The namespace table of a NumPy-API module: ``own`` entries (what the module must do
  its own way), then the functions above, then the module's functions of the same name."""
  entries = {}
  for name in FUNCTIONS:
    if name in own:
      entries[name] = own[name]
    elif name in _WRITTEN_HERE:
      entries[name] = functools.partial(_WRITTEN_HERE[name], np_like)
    else:
      entries[name] = getattr(np_like, name)
  return entries
