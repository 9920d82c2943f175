"""Rulebooks: which input row feeds which output row through which filter offset.

A `Rulebook` is built once per active set and filter size and can be passed to any
number of layers on that set (`sparse_conv2d(..., rulebook=)`,
`submanifold_conv2d(..., rulebook=)`), as spconv's ``indice_key`` or MinkowskiEngine's
kernel-map cache do. Build one with `for_conv` / `for_submanifold` (exposed as
``crossgrad.sparse.conv_rulebook`` / ``submanifold_rulebook``) or the array-level
`build` / `build_submanifold`.

**Sparse (VALID, stride s) convolution** (`build`). For input active sites ``H`` (rows
``n_valid`` onwards are padding):

* ``h_out`` (``capacity x 2``): output active sites in sparse_cnn's first-appearance order
  (input sites in order; for each, the output positions its filter reaches, row-major);
  padding rows hold -1.
* ``n_out``: the number of output active sites; rows beyond ``capacity`` are dropped,
  so ``n_out > capacity`` means the capacity was too small.
* ``dst`` (``a x f*f``): ``dst[i, p] = r * f*f + k`` where input row ``i``, seen through
  filter position ``p`` (sparse_cnn's loop order: output ``((row - f + 1 + p // f) / s,
  (col - f + 1 + p % f) / s)`` where that divides), lands in output row ``r`` at filter
  offset ``k`` (HWIO order, ``k = f*f - 1 - p``); -1 where that output is outside the
  image, beyond the capacity, not on the stride, or ``i`` is a padding row. Stored per
  input row it makes ``Q`` one scatter of ``a x f*f`` rows and its gradient one gather
  (`crossgrad.registry.ops.sparse_q`).

No Python loop runs over sites: candidates (site, filter position) are laid out as one
array in sparse_cnn's loop order, the first candidate of each output position is found
with a scatter-min over the output grid, and ranks come from a cumulative count.

**Submanifold (SAME, stride 1, odd f) convolution** (`build_submanifold`): the output
sites are the input sites, so the rulebook is one table ``src`` (``a x f*f``):
``src[r, k]`` is the input row at site ``H[r] + (k // f - c, k % f - c)`` (``c = (f-1)/2``),
``a`` (the capacity) where that site is inside the image but inactive (the ground
state), -1 where it is outside the image or ``r`` is a padding row (zero). Found by one
scatter of row numbers into an ``h x w`` grid and one gather per candidate. The table
is its own inverse (``src[r, k] = j`` exactly when ``src[j, f*f-1-k] = r``), which is
what makes `crossgrad.registry.ops.submanifold_q`'s backward a gather.

Every step costs in proportion to the candidates (``a * f*f``) or the grid, and shapes
depend only on static sizes, so the same code runs eagerly, under `jax.jit` and under
`tf.function(jit_compile=True)`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from crossgrad.backends.common.base import backend_of
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.sparse import containers


@containers.container
@dataclasses.dataclass(frozen=True)
class Rulebook:
  """The integer maps of one layer kind on one active set (see the module docstring).

  Arrays: ``h_out``, ``n_out``, ``dst`` (for a submanifold rulebook ``h_out`` is ``h_in``,
  ``n_out`` is ``n_valid`` and ``dst`` is ``src``), and the active set it was built for:
  ``h_in``, ``n_valid``. Static: the input's ``dense_shape`` (h, w, channels), ``f``,
  ``stride`` and ``submanifold``. A JAX pytree and a TF nest structure, so it can be
  built inside or outside a compiled function and passed in.
  """

  h_out: Any
  n_out: Any
  dst: Any
  h_in: Any
  n_valid: Any
  dense_shape: tuple[int, int, int]
  f: int
  stride: int = 1
  submanifold: bool = False

  @property
  def capacity(self) -> int:
    """Rows of the input it applies to."""
    return int(self.h_in.shape[0])

  @property
  def out_capacity(self) -> int:
    return int(self.h_out.shape[0])

  @property
  def out_size(self) -> tuple[int, int]:
    """Height and width of the output."""
    if self.submanifold:
      return self.dense_shape[:2]
    return output_size(self.dense_shape, self.f, self.stride)

  @property
  def kind(self) -> str:
    return "submanifold" if self.submanifold else f"sparse (f={self.f}, stride={self.stride})"

  # Pytree protocols (JAX's is registered by the JAX backend).
  def flatten(self):
    return ((self.h_out, self.n_out, self.dst, self.h_in, self.n_valid),
            (self.dense_shape, self.f, self.stride, self.submanifold))

  @classmethod
  def unflatten(cls, static, children) -> Rulebook:
    return cls(*children, *static)

  def __tf_flatten__(self):
    children, static = self.flatten()
    return static, children

  @classmethod
  def __tf_unflatten__(cls, static, children):
    return cls.unflatten(static, children)


def output_size(dense_shape, f: int, stride: int = 1) -> tuple[int, int]:
  """Height and width of a VALID convolution's output."""
  return (dense_shape[0] - f) // stride + 1, (dense_shape[1] - f) // stride + 1


def safe_capacity(capacity_in: int, dense_shape, f: int, stride: int = 1) -> int:
  """The most output sites ``capacity_in`` input sites can reach: never overflows."""
  ho, wo = output_size(dense_shape, f, stride)
  reach = -(-f // stride)
  return max(1, min(capacity_in * reach * reach, ho * wo))


def _on_stride(xp, v, size: int, f: int, stride: int):
  """``v / stride`` where ``v`` (an input position minus ``f - 1`` plus a filter
  position) divides by the stride, else -1: a lookup in a static table, so no integer
  division is needed (and stride 1 needs no table)."""
  if stride == 1:
    return v
  table = np.zeros(size + f, np.int32)  # Entry t: position t - (f - 1).
  positions = np.arange(size + f) - (f - 1)
  on = (positions >= 0) & (positions % stride == 0)
  table[on] = positions[on] // stride + 1
  return xp.take(xp.asarray(table), v + (f - 1)) - 1  # Outside the table: 0, so -1.


def build(xp, h_in, n_valid, dense_shape, f: int, capacity: int, stride: int = 1) -> Rulebook:
  """The sparse-convolution rulebook for sites ``h_in`` (int ``a x 2``) of ``dense_shape``."""
  a, kk = h_in.shape[0], f * f
  ho, wo = output_size(dense_shape, f, stride)
  grid = ho * wo
  row, col = h_in[:, 0], h_in[:, 1]
  live = xp.arange(a, dtype=xp.int32) < xp.astype(xp.asarray(n_valid), xp.int32)
  # Candidates (site, filter position) in sparse_cnn's loop order: position p = (u, v) of
  # site (row, col) reaches output ((row - f + 1 + u) / s, (col - f + 1 + v) / s).
  u = np.repeat(np.arange(f, dtype=np.int32), f)
  v = np.tile(np.arange(f, dtype=np.int32), f)
  i = _on_stride(xp, xp.reshape(xp.reshape(row, (a, 1)) + (u - (f - 1)), (a * kk,)),
                 dense_shape[0], f, stride)
  j = _on_stride(xp, xp.reshape(xp.reshape(col, (a, 1)) + (v - (f - 1)), (a * kk,)),
                 dense_shape[1], f, stride)
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
  return Rulebook(h_out, n_out, xp.reshape(dst, (a, kk)), h_in, n_valid,
                  tuple(dense_shape), f, stride)


def build_submanifold(xp, h_in, n_valid, dense_shape, f: int) -> Rulebook:
  """The submanifold rulebook (``src``, see the module docstring) for odd ``f``."""
  a, kk, (h, w) = h_in.shape[0], f * f, dense_shape[:2]
  c = (f - 1) // 2
  row, col = h_in[:, 0], h_in[:, 1]
  live = xp.arange(a, dtype=xp.int32) < xp.astype(xp.asarray(n_valid), xp.int32)
  # Row number + 1 of each active site on the h x w grid (0: inactive).
  occupied = xp.segment_sum(xp.arange(a, dtype=xp.int32) + 1,
                            xp.where(live, row * w + col, -1), h * w)
  i = xp.reshape(row, (a, 1)) + (np.repeat(np.arange(f, dtype=np.int32), f) - c)
  j = xp.reshape(col, (a, 1)) + (np.tile(np.arange(f, dtype=np.int32), f) - c)
  inside = xp.logical_and(xp.logical_and(xp.logical_and(i >= 0, i < h),
                                         xp.logical_and(j >= 0, j < w)),
                          xp.reshape(live, (a, 1)))
  found = xp.reshape(xp.take(occupied, xp.reshape(xp.where(inside, i * w + j, -1), (a * kk,))),
                     (a, kk)) - 1
  src = xp.where(inside, xp.where(found >= 0, found, a), -1)
  return Rulebook(h_in, n_valid, src, h_in, n_valid, tuple(dense_shape), f, 1, True)


def _pairs(xp, first, second, n):
  """An ``n x 2`` array from two length-``n`` vectors."""
  return xp.matrix_transpose(xp.reshape(first, (1, n)) * np.array([[1], [0]], np.int32)
                      + xp.reshape(second, (1, n)) * np.array([[0], [1]], np.int32))


def _backend(x) -> tuple[str, Any]:
  """The backend of ``x``'s arrays and its namespace (registering `Rulebook` with it)."""
  name = backend_of(x.H, x.M)
  return name, containers.namespace(name)


def _fail(problem, op, backend, argument, expected, actual, hint=None):
  raise CrossgradError(problem, op=op, backend=backend, argument=argument, expected=expected,
                       actual=actual, hint=hint)


def _check_filter(x, f, op, backend, odd=False):
  h, w, _ = x.dense_shape
  ok = isinstance(f, int) and not isinstance(f, bool) and 1 <= f <= min(h, w)
  if odd and ok:
    ok = f % 2 == 1
  if not ok:
    _fail("bad filter size", op, backend, "f",
          f"an odd int in [1, {min(h, w)}]" if odd else f"an int in [1, {min(h, w)}]", repr(f))


def for_conv(x, f: int, *, stride: int = 1, capacity: int | None = None,
             op: str = "conv_rulebook") -> Rulebook:
  """The rulebook of a sparse VALID convolution (filter ``f``, ``stride``) of ``x``.

  ``capacity``: static number of output rows. None: exactly the output sites where
  ``x`` is concrete (eager), else the bound `safe_capacity`. An eager build whose output
  has more sites than ``capacity`` raises; under jit rows beyond it are dropped.
  """
  backend, xp = _backend(x)
  _check_filter(x, f, op, backend)
  if not isinstance(stride, int) or isinstance(stride, bool) or stride < 1:
    _fail("bad stride", op, backend, "stride", "an int >= 1", repr(stride))
  bound = safe_capacity(x.capacity, x.dense_shape, f, stride)
  book = build(xp, x.H, x.n_valid, x.dense_shape, f, capacity or bound, stride)
  n_out = validation.concrete_values(book.n_out)
  if n_out is None:
    return book
  n_out = int(n_out)
  if capacity is not None and n_out > capacity:
    _fail("output active sites exceed the capacity", op, backend, "capacity",
          f">= {n_out}", capacity)
  if capacity is None:
    book = dataclasses.replace(book, h_out=xp.take(book.h_out, xp.arange(
        max(n_out, 1), dtype=xp.int32), axis=0))
  return dataclasses.replace(book, n_out=n_out)


def for_submanifold(x, f: int, *, op: str = "submanifold_rulebook") -> Rulebook:
  """The rulebook of a submanifold convolution (odd filter ``f``) of ``x``."""
  backend, xp = _backend(x)
  _check_filter(x, f, op, backend, odd=True)
  return build_submanifold(xp, x.H, x.n_valid, x.dense_shape, f)


def check_reuse(book: Rulebook, x, f: int, *, op: str, backend: str, submanifold: bool,
                stride: int = 1):
  """A `CrossgradError` unless ``book`` was built for ``x``'s active set and this layer."""
  if not isinstance(book, Rulebook):
    _fail("rulebook must be a Rulebook", op, backend, "rulebook", "crossgrad.sparse Rulebook",
          type(book).__name__)
  wanted = "submanifold" if submanifold else f"sparse (f={f}, stride={stride})"
  if (book.submanifold, book.f, book.stride) != (submanifold, f, stride):
    _fail("rulebook is for another kind of layer", op, backend, "rulebook", wanted, book.kind,
          hint="Build it with crossgrad.sparse.submanifold_rulebook(x, f)" if submanifold else
          "Build it with crossgrad.sparse.conv_rulebook(x, f, stride=...)")
  hint = "A rulebook serves one active set: build one per set (the output of a sparse conv " \
         "is a new set)"
  if tuple(book.dense_shape[:2]) != tuple(x.dense_shape[:2]):
    _fail("rulebook was built for another active set's shape", op, backend, "rulebook",
          f"built for h x w = {x.dense_shape[:2]}", f"built for {book.dense_shape[:2]}", hint)
  if book.capacity != x.capacity:
    _fail("rulebook was built for another active set's capacity", op, backend, "rulebook",
          f"built for capacity {x.capacity}", f"built for capacity {book.capacity}", hint)
  if book.h_in is x.H:
    return
  built, given = validation.concrete_values(book.h_in), validation.concrete_values(x.H)
  count, n = validation.concrete_values(book.n_valid), validation.concrete_values(x.n_valid)
  if any(v is None for v in (built, given, count, n)):
    return  # Traced: only the static facts above can be checked.
  if int(count) != int(n) or not np.array_equal(built[:int(n)], given[:int(n)]):
    _fail("rulebook was built for another active set", op, backend, "rulebook",
          f"built for these {int(n)} sites", f"built for {int(count)} other sites", hint)
