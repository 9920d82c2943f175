"""The integer rulebook of a sparse VALID, stride-1 convolution, built with array ops.

For input active sites ``H`` (rows ``n_valid`` onwards are padding) the rulebook says
which output row and filter offset each input row feeds, and which sites are output:

* ``h_out`` (``capacity x 2``): output active sites in seed 001's first-appearance order
  (input sites in order; for each, the output positions its filter reaches, row-major);
  padding rows hold -1.
* ``n_out``: the number of output active sites; rows beyond ``capacity`` are dropped,
  so ``n_out > capacity`` means the capacity was too small.
* ``dst`` (``a x f*f``): ``dst[i, p] = r * f*f + k`` where input row ``i``, seen through
  filter position ``p`` (the seed's loop order: output ``(row - f + 1 + p // f,
  col - f + 1 + p % f)``), lands in output row ``r`` at filter offset ``k`` (HWIO order,
  ``k = f*f - 1 - p``); -1 where that output is outside the image, beyond the capacity,
  or ``i`` is a padding row. Seen from the output side this is the seed's "which input
  row feeds each output row and filter offset"; stored per input row it makes ``Q`` one
  scatter of ``a x f*f`` rows and its gradient one gather (`crossgrad.registry.ops.sparse_q`).

No Python loop runs over sites: candidates (site, filter position) are laid out as one
array in the seed's loop order, the first candidate of each output position is found
with a scatter-min over the output grid, and ranks come from a cumulative count. Every
step costs in proportion to the candidates (``a * f*f``) or the output grid, and shapes
depend only on static sizes, so the same code runs eagerly, under `jax.jit` and under
`tf.function(jit_compile=True)`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class Rulebook:
  """``h_out``, ``n_out`` and ``dst`` as described in the module docstring."""

  h_out: Any
  n_out: Any
  dst: Any


def safe_capacity(capacity_in: int, dense_shape, f: int) -> int:
  """The most output sites ``capacity_in`` input sites can reach: never overflows."""
  h, w = dense_shape[0] - f + 1, dense_shape[1] - f + 1
  return max(1, min(capacity_in * f * f, h * w))


def build(xp, h_in, n_valid, dense_shape, f: int, capacity: int) -> Rulebook:
  """The rulebook for sites ``h_in`` (int32 ``a x 2``) of a ``dense_shape`` input."""
  a, kk = h_in.shape[0], f * f
  ho, wo = dense_shape[0] - f + 1, dense_shape[1] - f + 1
  grid = ho * wo
  row, col = h_in[:, 0], h_in[:, 1]
  live = xp.arange(a, dtype=xp.int32) < xp.astype(xp.asarray(n_valid), xp.int32)
  # Candidates (site, filter position) in the seed's loop order: position p = (u, v) of
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
  # An output site is numbered when its first candidate comes up; every candidate then
  # finds its output row through its site's first candidate.
  position = xp.arange(a * kk, dtype=xp.int32)
  first = xp.take(xp.segment_min(position, key, grid), key)
  is_first = xp.logical_and(valid, xp.equal(first, position))
  rank = xp.cumulative_sum(xp.astype(is_first, xp.int32), axis=0, dtype=xp.int32) - 1
  n_out = xp.sum(xp.astype(is_first, xp.int32), dtype=xp.int32)
  out_row = xp.take(rank, first)
  offset = np.tile(np.arange(kk - 1, -1, -1, dtype=np.int32), a)
  dst = xp.where(xp.logical_and(valid, out_row < capacity), out_row * kk + offset, -1)
  slot = xp.where(is_first, rank, capacity)
  h_out = xp.segment_sum(_pairs(xp, i + 1, j + 1, a * kk), slot, capacity) - 1
  return Rulebook(h_out=h_out, n_out=n_out, dst=xp.reshape(dst, (a, kk)))


def _pairs(xp, first, second, n):
  """An ``n x 2`` array from two length-``n`` vectors."""
  return xp.matrix_transpose(xp.reshape(first, (1, n)) * np.array([[1], [0]], np.int32)
                      + xp.reshape(second, (1, n)) * np.array([[0], [1]], np.int32))
