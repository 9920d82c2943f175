"""`sparse_q` (sparse_cnn, docs/sources.md): the Q matrix of a sparse convolution, and its gradient.

Inputs: ``M`` (input active-site values, ``a x n_in``), ``ground_state`` (``n_in``),
and two integer inputs from `crossgrad.sparse.rulebook.build`: ``h_out`` (``rows x 2``,
the output sites; padding rows -1) and ``dst`` (``a x f*f``: the entry ``r * f*f + k``
of Q, output row ``r`` at filter offset ``k``, that each input row is copied to through
each filter position; -1 for none). Output ``Q`` (``rows x f*f*n_in``): entry ``(r, k)``
holds the ``M`` row that lands there, or ``ground_state`` where none does, or 0 on
padding rows; so ``Q @ kernel.reshape(f*f*n_in, n_out)`` is the VALID, stride-1
convolution at the output active sites.

The forward is sparse_cnn's: the ground state everywhere, the active values written over
it, as one segment sum of the ``a*f*f`` copied rows (its cost follows the active sites;
the rest is one elementwise pass over Q). The backward is its transpose, as sparse_cnn
derives it: ``dM[i]`` sums the ``dQ`` entries taken from ``M[i]`` (one gather of
``a*f*f`` rows) and ``d ground_state`` is the total of ``dQ`` over live rows minus those
active parts. Both hold for any ``dst``, not only a rulebook's: entries outside Q are
dropped (no value, no gradient), and ``c`` rows landing on one entry make it their sum
plus ``(1 - c)`` times the ground state (a rulebook has ``c`` 0 or 1).
"""

import numpy as np

from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.op_registry import register
from crossgrad.registry.opdef import OpDef

INTEGER = ("int32", "int64")


def _forward(xp, M, ground_state, h_out, dst):
  rows, (a, kk), n_in = h_out.shape[0], dst.shape, M.shape[1]
  entries = xp.reshape(dst, (a * kk,))
  copies = xp.reshape(xp.broadcast_to(xp.reshape(M, (a, 1, n_in)), (a, kk, n_in)),
                      (a * kk, n_in))
  landed = xp.segment_sum(copies, entries, rows * kk)  # One row per entry of Q.
  count = xp.segment_sum(xp.ones((a * kk,), dtype=M.dtype), entries, rows * kk)
  live = h_out[:, :1] >= 0
  # Ground-state weight per entry: 1 where nothing lands on a live row, 0 where one
  # row lands (so the entry is that row exactly), 0 on padding rows.
  weight = xp.reshape(xp.astype(live, M.dtype) - xp.reshape(count, (rows, kk)), (rows * kk, 1))
  q = landed + weight * ground_state
  return xp.reshape(q, (rows, kk * n_in)), (entries, live, (a, kk, n_in))


def _backward(xp, residuals, g):
  entries, live, (a, kk, n_in) = residuals  # Sizes, not -1: M may have no rows.
  rows = live.shape[0]
  by_entry = xp.reshape(g, (rows * kk, n_in))
  picked = xp.reshape(xp.take(by_entry, entries, axis=0), (a, kk, n_in))
  d_m = xp.sum(picked, axis=1)
  # sparse_cnn's d ground_state: the total of dQ over live rows minus the active parts.
  total = xp.sum(xp.where(live, g, 0.0), axis=0)  # A select: padding rows give 0.
  d_ground = xp.sum(xp.reshape(total, (kk, n_in)), axis=0) - xp.sum(d_m, axis=0)
  return d_m, d_ground, None, None


def check_sites_and_ground_state(m, ground):
  """Checks M (active sites x channels) and ground_state (one value per channel); returns
  the number of rows of M (None if unknown). Shared with submanifold_q."""
  if m.shape is not None and len(m.shape) != 2:
    raise CrossgradError("M must be a matrix of active-site values", argument="input 'M'",
                         expected="float[a, n_in]", actual=str(m))
  n_in = None if m.shape is None else m.shape[1]
  if ground.dtype != m.dtype or (ground.shape is not None and (
      len(ground.shape) != 1 or None not in (n_in, ground.shape[0])
      and ground.shape[0] != n_in)):
    raise CrossgradError("ground_state needs one value per channel of M",
                         argument="input 'ground_state'", expected=f"{m.dtype}[{n_in}]",
                         actual=str(ground))
  return None if m.shape is None else m.shape[0]


def check_site_table(table, name: str, a, problem: str):
  """Checks an integer rulebook table with f*f entries for each of the ``a`` rows of M."""
  if table.dtype not in INTEGER or (table.shape is not None and (
      len(table.shape) != 2 or None not in (a, table.shape[0]) and table.shape[0] != a)):
    raise CrossgradError(problem, argument=f"input '{name}'", expected=f"int32[{a}, f*f]",
                         actual=str(table))


def _check_inputs(specs):
  m, ground, h_out, dst = (specs[k] for k in ("M", "ground_state", "h_out", "dst"))
  a = check_sites_and_ground_state(m, ground)
  if h_out.dtype not in INTEGER or (h_out.shape is not None and (
      len(h_out.shape) != 2 or h_out.shape[1] not in (None, 2))):
    raise CrossgradError("h_out must list the output sites", argument="input 'h_out'",
                         expected="int32[rows, 2]", actual=str(h_out))
  check_site_table(dst, "dst", a, "dst needs one row of Q entries per row of M")


def _sample(rng):
  """Seven active sites (two rows of padding) of a 5x5x2 input, f=2, with padded rows.

  The rulebook comes from sparse_cnn's loops over sites and filter positions, in NumPy
  (independent of `crossgrad.sparse.rulebook`, and needing no backend).
  """
  (h, w, n), f, capacity, sites = (5, 5, 2), 2, 9, 7
  kk = f * f
  ground_state = rng.standard_normal(n)
  m = np.zeros((capacity, n))
  m[:sites] = rng.standard_normal((sites, n))
  h_out = np.full(((h - f + 1) * (w - f + 1) + 2, 2), -1, np.int32)  # Two padding rows.
  dst = np.full((capacity, kk), -1, np.int32)
  rows: dict[tuple[int, int], int] = {}
  for i, site in enumerate(np.sort(rng.choice(h * w, size=sites, replace=False))):
    for p in range(kk):
      out = (site // w - f + 1 + p // f, site % w - f + 1 + p % f)
      if 0 <= out[0] <= h - f and 0 <= out[1] <= w - f:
        r = rows.setdefault(out, len(rows))
        h_out[r] = out
        dst[i, p] = r * kk + kk - 1 - p
  return m, ground_state, h_out, dst


SPARSE_Q = register(OpDef(
    name="sparse_q",
    forward=_forward,
    backward=_backward,
    gradient="exact",
    sample=_sample,
    nondiff=("h_out", "dst"),
    check_inputs=_check_inputs,
    doc="Q of a sparse convolution (sparse_cnn): ground state plus a scatter of M by the "
        "rulebook; gather backward",
))
