"""The integer rulebook of a sparse VALID, stride-1 convolution, built with array ops.

For input active sites ``H`` (rows ``n_valid`` onwards are padding) the rulebook says
which input row feeds each output row at each filter offset:

* ``src[r, k]`` (``capacity x f*f``): the input row seen by output row ``r`` at filter
  offset ``k = dy * f + dx`` (HWIO order), or `GROUND` where that input site is
  inactive, or `PAD` on padding rows ``r >= n_out``.
* ``h_out`` (``capacity x 2``): output active sites in seed 001's first-appearance order
  (input sites in order; for each, the output positions its filter reaches, row-major);
  padding rows hold -1.
* ``n_out``: the number of output active sites; rows beyond ``capacity`` are dropped,
  so ``n_out > capacity`` means the capacity was too small.

No Python loop runs over sites: candidates (site, filter position) are laid out as one
array in the seed's loop order, the first candidate of each output position is found
with a scatter-min over the output grid, ranks come from a cumulative sum, and ``src``
is a gather from a map of the input grid at each output site's window. Shapes depend
only on static sizes, so the same code runs eagerly, under `jax.jit` and under
`tf.function(jit_compile=True)`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

GROUND = -1  # `src` entry: the input site is inactive and holds the ground state.
PAD = -2  # `src` entry: a padding row beyond the output's active sites.


@dataclasses.dataclass(frozen=True)
class Rulebook:
  """``src``, ``h_out`` and ``n_out`` as described in the module docstring."""

  src: Any
  h_out: Any
  n_out: Any


def safe_capacity(capacity_in: int, dense_shape, f: int) -> int:
  """The most output sites ``capacity_in`` input sites can reach: never overflows."""
  h, w = dense_shape[0] - f + 1, dense_shape[1] - f + 1
  return max(1, min(capacity_in * f * f, h * w))


def build(xp, h_in, n_valid, dense_shape, f: int, capacity: int) -> Rulebook:
  """The rulebook for sites ``h_in`` (int32 ``a x 2``) of a ``dense_shape`` input."""
  a, kk = h_in.shape[0], f * f
  h, w = dense_shape[0], dense_shape[1]
  ho, wo = h - f + 1, w - f + 1
  grid = ho * wo
  columns = xp.transpose(h_in)
  row, col = xp.take(columns, 0), xp.take(columns, 1)
  live = xp.arange(a, "int32") < xp.astype(n_valid, "int32")
  # Input grid -> input row + 1 (0 where inactive): one small scatter.
  site_of = xp.segment_sum(xp.arange(a, "int32") + 1, xp.where(live, row * w + col, -1),
                           h * w)
  # Candidates (site, filter position) in the seed's loop order: position (u, v) of
  # site (row, col) reaches output (row - f + 1 + u, col - f + 1 + v).
  u = np.repeat(np.arange(f, dtype=np.int32), f)
  v = np.tile(np.arange(f, dtype=np.int32), f)
  i = xp.reshape(xp.reshape(row, (a, 1)) + (u - (f - 1)), (a * kk,))
  j = xp.reshape(xp.reshape(col, (a, 1)) + (v - (f - 1)), (a * kk,))
  valid = xp.logical_and(
      xp.logical_and(xp.reshape(xp.broadcast_to(xp.reshape(live, (a, 1)), (a, kk)), (-1,)),
                     xp.logical_and(i >= 0, i < ho)),
      xp.logical_and(j >= 0, j < wo))
  key = xp.where(valid, i * wo + j, grid)  # Out of range, so dropped, where invalid.
  # An output site is numbered when its first candidate comes up.
  position = xp.arange(a * kk, "int32")
  first = xp.segment_min(position, key, grid)
  is_first = xp.logical_and(valid, xp.equal(xp.take(first, key), position))
  count = xp.astype(is_first, "int32")
  n_out = xp.astype(xp.sum(count), "int32")
  slot = xp.where(is_first, xp.cumsum(count, 0) - 1, capacity)
  h_out = xp.segment_sum(_pairs(xp, i + 1, j + 1, a * kk), slot, capacity) - 1
  # src by gathering the input grid at each output site's window; offset k = u * f + v
  # of the window is HWIO's (dy, dx) = (u, v).
  out_columns = xp.transpose(h_out)
  window = ((xp.reshape(xp.take(out_columns, 0), (capacity, 1)) + u) * w
            + xp.reshape(xp.take(out_columns, 1), (capacity, 1)) + v)
  padding = xp.reshape(xp.arange(capacity, "int32"), (capacity, 1)) >= xp.minimum(
      n_out, capacity)
  src = xp.where(padding, PAD, xp.take(site_of, window) - 1)  # -1 is GROUND.
  return Rulebook(src=xp.astype(src, "int32"), h_out=h_out, n_out=n_out)


def _pairs(xp, first, second, n):
  """An ``n x 2`` array from two length-``n`` vectors."""
  return xp.transpose(xp.reshape(first, (1, n)) * np.array([[1], [0]], np.int32)
                      + xp.reshape(second, (1, n)) * np.array([[0], [1]], np.int32))
