"""`sparse_conv2d`: one sparse VALID convolution layer (as in sparse_cnn), any backend.

``M_out = Q @ W + b`` at the output active sites, with ``Q`` from the `sparse_q` op
(so the gradient of ``M`` and ``ground_state`` is the op's gather backward) and
the next ground state ``tile(ground_state, f*f) @ W + b``, the value every output
whose window sees only inactive sites takes. No activation is applied (as in sparse_cnn's
gradient check); apply one to ``M`` and ``ground_state`` alike (`SparseData.map`).
With ``stride > 1`` it is a downsampling step (e.g. ``f = stride = 2``).
"""

from __future__ import annotations

from typing import Any

from crossgrad.registry.errors import CrossgradError
from crossgrad.sparse import rulebook as rulebooks
from crossgrad.sparse.data import SparseData, dtype_name, validate

OP = "sparse_conv2d"


def sparse_conv2d(backend: str, x: SparseData, W: Any, b: Any, f: int, *, stride: int = 1,
                  capacity: int | None = None,
                  rulebook: rulebooks.Rulebook | None = None) -> SparseData:
  """The next `SparseData` after convolving ``x`` with ``W`` and adding ``b``.

  Args:
    backend: "numpy", "tensorflow", "jax" or "torch".
    x: the input `SparseData` (its arrays from ``backend``).
    W: HWIO kernel ``f x f x n_in x n_out``, or sparse_cnn's ``f*f*n_in x n_out``.
    b: bias, ``n_out``.
    f: filter size.
    stride: the step between output positions (VALID: ``(h - f) // stride + 1`` rows).
    capacity: static number of output rows. None: exactly the output sites where the
      input is concrete (eager), else the bound `rulebook.safe_capacity`. An eager call
      whose output has more sites than ``capacity`` raises; under jit ``n_valid`` of
      the result is capped at ``capacity`` (rows beyond it are dropped).
    rulebook: from ``crossgrad.sparse.conv_rulebook(x, f, stride=...)``, built once for
      this active set and reused (then ``capacity`` is the rulebook's).

  Returns:
    `SparseData` of shape ``((h - f) // stride + 1, (w - f) // stride + 1, n_out)``
    padded to the capacity.
  """
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  module = base.load(backend)
  xp = module.xp
  n_in, n_out, f = check_layer(OP, backend, x, W, b, f)
  if rulebook is None:
    book = rulebooks.for_conv(x, f, stride=stride, capacity=capacity, op=OP)
  else:
    rulebooks.check_reuse(rulebook, x, f, op=OP, backend=backend, submanifold=False,
                          stride=stride)
    if capacity is not None and capacity != rulebook.out_capacity:
      raise CrossgradError("capacity differs from the rulebook's", op=OP, backend=backend,
                           argument="capacity", expected=f"None or {rulebook.out_capacity}",
                           actual=capacity)
    book = rulebook
  kk = f * f
  weights = xp.reshape(W, (kk * n_in, n_out))
  rows = book.out_capacity
  q = module.get("sparse_q")(x.M, x.ground_state, book.h_out, book.dst)
  live = xp.reshape(xp.arange(rows, dtype=xp.int32), (rows, 1)) < book.n_out
  m_out = xp.matmul(q, weights) + xp.reshape(b, (1, n_out))
  m_out = xp.where(live, m_out, xp.zeros_like(m_out))
  n_valid = book.n_out if isinstance(book.n_out, int) else xp.minimum(book.n_out, rows)
  return SparseData(book.h_out, m_out, book.out_size + (n_out,),
                    next_ground_state(xp, x.ground_state, weights, b, kk), n_valid)


def next_ground_state(xp, ground_state, weights, b, kk: int):
  """``tile(ground_state, f*f) @ W + b``: an output whose window is all ground state."""
  n_in = ground_state.shape[0]
  tiled = xp.reshape(xp.broadcast_to(xp.reshape(ground_state, (1, n_in)), (kk, n_in)),
                     (1, kk * n_in))
  return xp.reshape(xp.matmul(tiled, weights), (weights.shape[1],)) + b


def for_backend(backend: str):
  """`sparse_conv2d` bound to one backend: ``crossgrad.<backend>.sparse_conv2d``."""
  def bound(x: SparseData, W: Any, b: Any, f: int, *, stride: int = 1,
            capacity: int | None = None, rulebook: rulebooks.Rulebook | None = None):
    return sparse_conv2d(backend, x, W, b, f, stride=stride, capacity=capacity,
                         rulebook=rulebook)
  bound.__name__ = bound.__qualname__ = "sparse_conv2d"
  bound.__doc__ = (f"sparse_cnn's sparse convolution layer in {backend}; see "
                   "`crossgrad.sparse.conv.sparse_conv2d`.")
  return bound


def check_layer(op: str, backend: str, x: SparseData, W: Any, b: Any,
                f: int | None) -> tuple[int, int, int]:
  """``(n_in, n_out, f)`` after checking ``x``, the kernel (``f`` None: from its shape,
  odd), bias and dtypes; a `CrossgradError` naming the argument otherwise."""
  def fail(problem, argument, expected, actual):
    raise CrossgradError(problem, op=op, backend=backend, argument=argument,
                         expected=expected, actual=actual)

  if not isinstance(x, SparseData):
    fail("x must be SparseData", "x", "SparseData", type(x).__name__)
  validate(x, op)
  h, w, n_in = x.dense_shape
  shape = tuple(int(d) for d in W.shape)
  if f is None:  # Submanifold: the filter size comes from the kernel, and must be odd.
    side = shape[0] if len(shape) == 4 else round((shape[0] / n_in) ** 0.5) if shape else 0
    if side < 1 or side % 2 == 0 or side > min(h, w):
      fail("kernel must be f x f with odd f no larger than the input", "W",
           f"HWIO (f, f, {n_in}, n_out), f odd in [1, {min(h, w)}]", shape)
    f = side
  elif not isinstance(f, int) or isinstance(f, bool) or not 1 <= f <= min(h, w):
    fail("bad filter size", "f", f"an int in [1, {min(h, w)}]", repr(f))
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
  return n_in, n_out, f
