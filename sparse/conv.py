"""`sparse_conv2d`: one sparse VALID, stride-1 convolution layer (seed 001), any backend.

``M_out = Q @ W + b`` at the output active sites, with ``Q`` from the `sparse_q` op
(so the gradient of ``M`` and ``ground_state`` is the op's gather backward) and
the next ground state ``tile(ground_state, f*f) @ W + b``, the value every output
whose window sees only inactive sites takes. No activation is applied (as in the seed's
gradient check); apply one to ``M`` and ``ground_state`` alike.
"""

from __future__ import annotations

from typing import Any

from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.sparse import rulebook
from crossgrad.sparse.data import SparseData, dtype_name, validate

OP = "sparse_conv2d"


def sparse_conv2d(backend: str, x: SparseData, W: Any, b: Any, f: int, *,
                  capacity: int | None = None) -> SparseData:
  """The next `SparseData` after convolving ``x`` with ``W`` and adding ``b``.

  Args:
    backend: "numpy", "tensorflow", "jax" or "torch".
    x: the input `SparseData` (its arrays from ``backend``).
    W: HWIO kernel ``f x f x n_in x n_out``, or seed 001's ``f*f*n_in x n_out``.
    b: bias, ``n_out``.
    f: filter size.
    capacity: static number of output rows. None: exactly the output sites where the
      input is concrete (eager), else the bound `rulebook.safe_capacity`. An eager call
      whose output has more sites than ``capacity`` raises; under jit ``n_valid`` of
      the result is capped at ``capacity`` (rows beyond it are dropped).

  Returns:
    `SparseData` of shape ``(h - f + 1, w - f + 1, n_out)`` padded to the capacity.
  """
  from crossgrad.backends import base  # pylint: disable=g-import-not-at-top
  module = base.load(backend)
  xp = module.xp
  n_in, n_out = _check(backend, x, W, b, f)
  kk = f * f
  weights = xp.reshape(W, (kk * n_in, n_out))
  bound = rulebook.safe_capacity(x.capacity, x.dense_shape, f)
  book = rulebook.build(xp, x.H, x.n_valid, x.dense_shape, f, capacity or bound)
  n_out_sites = validation.concrete_values(book.n_out)
  if n_out_sites is not None:
    n_out_sites = int(n_out_sites)
    if capacity is None:
      keep = xp.arange(max(n_out_sites, 1), dtype=xp.int32)
      book = rulebook.Rulebook(xp.take(book.h_out, keep, axis=0), book.n_out, book.dst)
    elif n_out_sites > capacity:
      raise CrossgradError("output active sites exceed the capacity", op=OP,
                           backend=backend, argument="capacity",
                           expected=f">= {n_out_sites}", actual=capacity)
  rows = int(book.h_out.shape[0])
  q = module.get("sparse_q")(x.M, x.ground_state, book.h_out, book.dst)
  live = xp.reshape(xp.arange(rows, dtype=xp.int32), (rows, 1)) < book.n_out
  m_out = xp.matmul(q, weights) + xp.reshape(b, (1, n_out))
  m_out = xp.where(live, m_out, xp.zeros_like(m_out))
  tiled = xp.reshape(xp.broadcast_to(xp.reshape(x.ground_state, (1, n_in)), (kk, n_in)),
                     (1, kk * n_in))
  ground = xp.reshape(xp.matmul(tiled, weights), (n_out,)) + b
  h, w, _ = x.dense_shape
  n_valid = n_out_sites if n_out_sites is not None else xp.minimum(book.n_out, rows)
  return SparseData(book.h_out, m_out, (h - f + 1, w - f + 1, n_out), ground, n_valid)


def for_backend(backend: str):
  """`sparse_conv2d` bound to one backend: ``crossgrad.<backend>.sparse_conv2d``."""
  def bound(x: SparseData, W: Any, b: Any, f: int, *, capacity: int | None = None):
    return sparse_conv2d(backend, x, W, b, f, capacity=capacity)
  bound.__name__ = bound.__qualname__ = "sparse_conv2d"
  bound.__doc__ = (f"Seed 001's sparse convolution layer in {backend}; see "
                   "`crossgrad.sparse.conv.sparse_conv2d`.")
  return bound


def _check(backend: str, x: SparseData, W: Any, b: Any, f: int) -> tuple[int, int]:
  def fail(problem, argument, expected, actual):
    raise CrossgradError(problem, op=OP, backend=backend, argument=argument,
                         expected=expected, actual=actual)

  if not isinstance(x, SparseData):
    fail("x must be SparseData", "x", "SparseData", type(x).__name__)
  validate(x, OP)
  h, w, n_in = x.dense_shape
  if not isinstance(f, int) or isinstance(f, bool) or not 1 <= f <= min(h, w):
    fail("bad filter size", "f", f"an int in [1, {min(h, w)}]", repr(f))
  shape = tuple(int(d) for d in W.shape)
  if len(shape) == 4 and shape[:3] != (f, f, n_in) or len(shape) == 2 and (
      shape[0] != f * f * n_in) or len(shape) not in (2, 4):
    fail("kernel does not match f and the input channels", "W",
         f"HWIO ({f}, {f}, {n_in}, n_out) or ({f * f * n_in}, n_out)", shape)
  n_out = shape[-1]
  if tuple(int(d) for d in b.shape) != (n_out,):
    fail("bias needs one value per output channel", "b", f"({n_out},)", tuple(b.shape))
  for name, value in (("W", W), ("b", b), ("x.ground_state", x.ground_state)):
    if dtype_name(value) != dtype_name(x.M):
      fail("dtype differs from x.M's", name, dtype_name(x.M), dtype_name(value))
  return n_in, n_out
