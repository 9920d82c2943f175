"""The elementwise error of a row as a small grid, where in the array the error lies."""

from __future__ import annotations

import numpy as np

SIDE = 64  # At most SIDE x SIDE cells.


def error_map(actual: np.ndarray, expected: np.ndarray) -> list:
  """|actual - expected| / max|expected| elementwise as nested lists of at most two
  dimensions (leading axes folded into the first) and `SIDE` cells a side, each cell the
  largest error of the elements it covers; complex arrays by their modulus, NaN or inf
  (in one array only) as 1."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  scale = float(np.max(np.abs(expected), initial=0.0)) or 1.0
  error = np.abs(actual.astype(np.complex128) - expected) / scale
  error = np.where(np.isfinite(error), error, 1.0)
  if error.ndim == 0:
    error = error.reshape(1, 1)
  elif error.ndim == 1:
    error = error.reshape(1, -1)
  else:
    error = error.reshape(-1, error.shape[-1])
  for axis in (0, 1):
    error = _pooled(error, axis)
  return [[float(f"{v:.3g}") for v in row] for row in error]


def _pooled(error: np.ndarray, axis: int) -> np.ndarray:
  """The largest error over runs of consecutive elements along ``axis``, at most `SIDE`."""
  n = error.shape[axis]
  if n <= SIDE:
    return error
  edges = np.linspace(0, n, SIDE + 1).astype(int)
  return np.maximum.reduceat(error, edges[:-1], axis=axis)
