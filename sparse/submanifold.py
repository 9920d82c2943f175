"""`submanifold_conv2d`: a sparse convolution whose output sites are its input sites.

Graham's submanifold sparse convolution (SparseConvNet): a SAME, stride-1 convolution
with an odd filter, computed only at the active sites, so a deep network stays as sparse
as its input (a `sparse_conv2d` dilates the active set by ``f - 1`` each layer).
``M_out = Q @ W + b`` with ``Q`` from the `submanifold_q` op: each active site sees its
active neighbours' values, the ground state at inactive sites inside the image and
zero outside it, exactly what a dense SAME convolution of ``to_dense()`` reads there. The
output keeps ``H``, the capacity and ``n_valid`` (in the input's order); its ground state,
the value of an inactive site whose whole window is inactive, is
``tile(ground_state, f*f) @ W + b`` as for `sparse_conv2d`.
"""

from __future__ import annotations

from typing import Any

from crossgrad.sparse import rulebook as rulebooks
from crossgrad.sparse.conv import check_layer, next_ground_state
from crossgrad.sparse.data import SparseData

OP = "submanifold_conv2d"


def submanifold_conv2d(backend: str, x: SparseData, W: Any, b: Any, *,
                       rulebook: rulebooks.Rulebook | None = None) -> SparseData:
  """The submanifold convolution of ``x`` with ``W`` (odd ``f``), plus ``b``.

  Args:
    backend: "numpy", "tensorflow" or "jax".
    x: the input `SparseData` (its arrays from ``backend``).
    W: HWIO kernel ``f x f x n_in x n_out`` with odd ``f``, or ``f*f*n_in x n_out``.
    b: bias, ``n_out``.
    rulebook: from ``crossgrad.sparse.submanifold_rulebook(x, f)``, built once for this
      active set and reused by every submanifold layer with this ``f`` on it; None
      builds one.

  Returns:
    `SparseData` with ``x``'s sites, capacity and ``n_valid``, and ``n_out`` channels.
  """
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  module = base.load(backend)
  xp = module.xp
  n_in, n_out, f = check_layer(OP, backend, x, W, b, None)
  if rulebook is None:
    rulebook = rulebooks.for_submanifold(x, f, op=OP)
  else:
    rulebooks.check_reuse(rulebook, x, f, op=OP, backend=backend, submanifold=True)
  kk, rows = f * f, x.capacity
  weights = xp.reshape(W, (kk * n_in, n_out))
  q = module.get("submanifold_q")(x.M, x.ground_state, rulebook.dst)
  live = xp.reshape(xp.arange(rows, dtype=rulebook.dst.dtype), (rows, 1)) < x.n_valid
  m_out = xp.matmul(q, weights) + xp.reshape(b, (1, n_out))
  m_out = xp.where(live, m_out, xp.zeros_like(m_out))
  h, w, _ = x.dense_shape
  return SparseData(x.H, m_out, (h, w, n_out),
                    next_ground_state(xp, x.ground_state, weights, b, kk), x.n_valid)


def for_backend(backend: str):
  """`submanifold_conv2d` bound to one backend: ``crossgrad.<backend>.submanifold_conv2d``."""
  def bound(x: SparseData, W: Any, b: Any, *, rulebook: rulebooks.Rulebook | None = None):
    return submanifold_conv2d(backend, x, W, b, rulebook=rulebook)
  bound.__name__ = bound.__qualname__ = "submanifold_conv2d"
  bound.__doc__ = (f"Submanifold sparse convolution in {backend}; see "
                   "`crossgrad.sparse.submanifold.submanifold_conv2d`.")
  return bound
