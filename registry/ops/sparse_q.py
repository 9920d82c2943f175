"""`sparse_q` (seed 001): the Q matrix of a sparse convolution, and its gradient.

Inputs: ``M`` (input active-site values, ``a x n_in``), ``ground_state`` (``n_in``) and
the integer rulebook ``src`` (``rows x f*f``, from `crossgrad.sparse.rulebook.build`).
Output ``Q`` (``rows x f*f*n_in``): row ``r`` holds, for each filter offset ``k`` (HWIO
order) and channel ``c``, ``M[src[r, k], c]``, or ``ground_state[c]`` where ``src`` is
`GROUND`, or 0 on `PAD` rows; so ``Q @ kernel.reshape(f*f*n_in, n_out)`` is the VALID,
stride-1 convolution at the output active sites.

The forward is one gather from ``M`` with ``ground_state`` appended as an extra row.
Backward as seed 001 derives it: ``dM[i]`` sums the ``dQ`` entries taken from ``M[i]``
(at most one per filter offset, found by inverting the rulebook with one scatter of
entry numbers, then gathered: ``a*f*f`` rows instead of a segment sum over all
``rows*f*f``), and ``d ground_state`` is the total of ``dQ`` minus those active parts.
``PAD`` rows carry no gradient.

That inversion needs a real rulebook: each input site at most once per filter offset.
Where ``src``'s values are known (eager) a repeated site is a `CrossgradError`; under
``jax.jit``/``tf.function`` it is not checked, and ``dM`` would miss the repeats: build
``src`` with `crossgrad.sparse.rulebook.build` (as `sparse_conv2d` does).
"""

import numpy as np

from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.op_registry import register
from crossgrad.registry.opdef import OpDef
from crossgrad.sparse import rulebook

_INTEGER = ("int32", "int64")


def _check_rulebook_values(xp, src, a):
  """Each input site at most once per filter offset (what the backward's inversion needs)."""
  values = validation.concrete_values(src)
  if values is None:
    return
  rows, kk = values.shape
  keys = (values * kk + np.arange(kk))[(values >= 0) & (values < a)]
  unique, counts = np.unique(keys, return_counts=True)
  if np.any(counts > 1):
    key = int(unique[np.argmax(counts > 1)])
    raise CrossgradError(
        "the rulebook names an input site twice at one filter offset", op="sparse_q",
        backend=xp.backend, argument="input 'src'",
        expected="each site at most once per column",
        actual=f"site {key // kk} {int(counts.max())} times in column {key % kk}",
        hint="Build src with crossgrad.sparse.rulebook.build")


def _forward(xp, M, ground_state, src):
  rows, kk = src.shape
  a, n_in = M.shape
  _check_rulebook_values(xp, src, a)
  # One gather from M with the ground state as row a; PAD reads a zero row.
  rows_ext = xp.concatenate([M, xp.reshape(ground_state, (1, n_in))], 0)
  index = xp.where(xp.equal(src, rulebook.GROUND), a, src)
  q = xp.take(rows_ext, index)
  return xp.reshape(q, (rows, kk * n_in)), (index, a)


def _backward(xp, residuals, g):
  index, a = residuals
  rows, kk = index.shape
  n = rows * kk
  flat = xp.reshape(g, (n, -1))
  # The inverse rulebook: M[i] feeds at most one Q entry per offset k, so one scatter of
  # entry numbers (no two land on one slot; ground and PAD entries are dropped) says
  # which. dM is then a gather of a*f*f rows of dQ rather than a segment sum of all of
  # them; a missing entry (-1) reads a zero row.
  slot = xp.where(xp.logical_and(index >= 0, index < a),
                  index * kk + xp.reshape(xp.arange(kk, "int32"), (1, kk)), -1)
  entry = xp.segment_sum(xp.arange(n, "int32") + 1, xp.reshape(slot, (n,)), a * kk) - 1
  d_m = xp.sum(xp.reshape(xp.take(flat, entry), (a, kk, -1)), 1)
  # d ground_state as seed 001 derives it: the total of dQ over live rows (PAD rows carry
  # no gradient) minus the active parts.
  live = xp.greater(xp.take(xp.transpose(index), 0), rulebook.PAD)
  total = xp.matmul(xp.reshape(xp.astype(live, g.dtype), (1, rows)), xp.reshape(g, (rows, -1)))
  d_ground = xp.sum(xp.reshape(total, (kk, -1)), 0) - xp.sum(d_m, 0)
  return d_m, d_ground, None


def _check_inputs(specs):
  m, ground, src = specs["M"], specs["ground_state"], specs["src"]
  if m.shape is not None and len(m.shape) != 2:
    raise CrossgradError("M must be a matrix of active-site values", argument="input 'M'",
                         expected="float[a, n_in]", actual=str(m))
  if src.dtype not in _INTEGER or (src.shape is not None and len(src.shape) != 2):
    raise CrossgradError("src must be an integer rulebook", argument="input 'src'",
                         expected="int32[rows, f*f]", actual=str(src))
  if src.shape is not None and src.shape[1] is not None:
    f = int(round(src.shape[1] ** 0.5))
    if f * f != src.shape[1]:
      raise CrossgradError("src needs one column per filter offset", argument="input 'src'",
                           expected="f*f columns", actual=src.shape[1])
  n_in = None if m.shape is None else m.shape[1]
  if ground.dtype != m.dtype or (ground.shape is not None and (
      len(ground.shape) != 1 or None not in (n_in, ground.shape[0])
      and ground.shape[0] != n_in)):
    raise CrossgradError("ground_state needs one value per channel of M",
                         argument="input 'ground_state'", expected=f"{m.dtype}[{n_in}]",
                         actual=str(ground))


def _sample(rng):
  """Seven active sites (two rows of padding) of a 5x5x2 input, f=2, with padded rows."""
  from crossgrad.sparse.data import SparseData  # pylint: disable=g-import-not-at-top
  ground_state = rng.standard_normal(2)
  dense = np.broadcast_to(ground_state, (5, 5, 2)).copy()
  sites = rng.choice(25, size=7, replace=False)
  dense.reshape(25, 2)[sites] = rng.standard_normal((7, 2))
  x = SparseData.from_dense(dense, ground_state, capacity=9)
  book = rulebook.build(_numpy_xp(), x.H, x.n_valid, x.dense_shape, 2,
                        rulebook.safe_capacity(9, x.dense_shape, 2) + 2)
  return x.M, x.ground_state, book.src


def _numpy_xp():
  from crossgrad.backends import numpy as reference  # pylint: disable=g-import-not-at-top
  return reference.xp


SPARSE_Q = register(OpDef(
    name="sparse_q",
    forward=_forward,
    backward=_backward,
    gradient="exact",
    sample=_sample,
    nondiff=("src",),
    check_inputs=_check_inputs,
    doc="Q of a sparse convolution (seed 001): gather of M / ground state by a rulebook; "
        "segment-sum backward",
))
