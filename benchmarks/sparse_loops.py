"""sparse_cnn's sparse-convolution algorithm as written there: Python loops over sites.

The baseline of `crossgrad.benchmarks.sparse_conv`, and an independent reference in
the tests: ``build_q`` is sparse_cnn's forward (H_out in first-appearance order, Q with
the ground state where inactive), ``grad_q`` its backward (dM, d ground_state).
"""

from __future__ import annotations

import numpy as np


def filter_positions(row: int, col: int, height: int, width: int, f: int):
  """Output positions whose f x f window covers input (row, col), row-major."""
  for i in range(max(row - f + 1, 0), min(row + 1, height - f + 1)):
    for j in range(max(col - f + 1, 0), min(col + 1, width - f + 1)):
      yield i, j


def position_in_filter(i: int, j: int, row: int, col: int, f: int, channel: int,
                       n_in: int) -> int:
  """Column of Q holding input (row, col, channel) for output (i, j), HWIO order."""
  return ((row - i) * f + (col - j)) * n_in + channel


def output_sites(h_in, dense_shape, f: int) -> dict:
  """Output site -> row of Q, numbered in order of first appearance."""
  sites = {}
  for row, col in h_in:
    for ij in filter_positions(row, col, dense_shape[0], dense_shape[1], f):
      if ij not in sites:
        sites[ij] = len(sites)
  return sites


def build_q(h_in, m_in, dense_shape, f: int, ground_state):
  """(H_out, Q) of sparse_cnn's forward."""
  n_in = dense_shape[2]
  sites = output_sites(h_in, dense_shape, f)
  h_out = np.empty((len(sites), 2), np.int32)
  q = np.empty((len(sites), f * f, n_in), m_in.dtype)
  q[:] = ground_state
  q = q.reshape(len(sites), f * f * n_in)
  for idx, (row, col) in enumerate(h_in):
    for i, j in filter_positions(row, col, dense_shape[0], dense_shape[1], f):
      r = sites[(i, j)]
      h_out[r] = i, j
      for channel in range(n_in):
        q[r, position_in_filter(i, j, row, col, f, channel, n_in)] = m_in[idx, channel]
  return h_out, q


def grad_q(dq, h_in, m_in, dense_shape, f: int):
  """(dM, d ground_state) of sparse_cnn's backward: the total minus the active parts."""
  n_in = dense_shape[2]
  sites = output_sites(h_in, dense_shape, f)
  dm = np.zeros_like(m_in)
  dt = np.sum(dq.reshape(len(sites), f * f, n_in), axis=(0, 1))
  for idx, (row, col) in enumerate(h_in):
    for i, j in filter_positions(row, col, dense_shape[0], dense_shape[1], f):
      r = sites[(i, j)]
      for channel in range(n_in):
        d = dq[r, position_in_filter(i, j, row, col, f, channel, n_in)]
        dm[idx, channel] += d
        dt[channel] -= d
  return dm, dt
