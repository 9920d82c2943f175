"""`SparseData`: a sparse activation as in sparse_cnn (docs/sources.md), in NumPy,
TensorFlow or JAX arrays.

``H`` (``capacity x 2`` int32) holds the active sites (row, col); ``M`` (``capacity x
n``) their values; ``dense_shape`` is ``(h, w, n)``; ``ground_state`` (``n``) the value
every inactive site holds. Only the first ``n_valid`` rows are active sites: the rest
pad the arrays to a static capacity (``H`` rows -1, ``M`` rows 0) so that shapes do not
depend on the data and the same code compiles under `jax.jit` and
`tf.function(jit_compile=True)`. ``n_valid`` is a Python int, or an int32 scalar where
the count is only known at run time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from crossgrad.backends.common.base import backend_of
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.sparse.containers import container, namespace


def dtype_name(x: Any) -> str:
  """The dtype's name ("float32") of a NumPy, TensorFlow, JAX or torch array."""
  return getattr(x.dtype, "name", str(x.dtype).removeprefix("torch."))


@container
@dataclasses.dataclass(frozen=True)
class SparseData:
  """Active sites ``H``, values ``M``, ``dense_shape``, ``ground_state``, ``n_valid``."""

  H: Any  # int32 (int64 is converted).
  M: Any
  dense_shape: tuple[int, int, int]
  ground_state: Any
  n_valid: Any = None

  def __post_init__(self):
    object.__setattr__(self, "dense_shape", tuple(int(d) for d in self.dense_shape))
    index_type = dtype_name(self.H)
    if index_type not in ("int32", "int64"):
      raise CrossgradError("H must hold integer sites", op="SparseData",
                           backend=backend_of(self.H), argument="H",
                           expected="int32 or int64", actual=index_type)
    if index_type == "int64":
      xp = namespace(backend_of(self.H))
      object.__setattr__(self, "H", xp.astype(self.H, xp.int32))
    if self.n_valid is None:
      object.__setattr__(self, "n_valid", int(self.H.shape[0]))
    validate(self)

  @property
  def capacity(self) -> int:
    return int(self.M.shape[0])

  @classmethod
  def from_dense(cls, dense: Any, ground_state: Any = None, *,
                 capacity: int | None = None) -> SparseData:
    """Sites where any channel differs from ``ground_state`` (default 0), row-major.

    Works on NumPy, TensorFlow or JAX arrays (differentiably in the frameworks). With
    ``capacity=None`` the result is exactly sized where ``dense`` is concrete and has
    capacity ``h * w`` while traced.
    """
    backend = backend_of(dense, ground_state)
    xp = namespace(backend)
    if len(dense.shape) != 3:
      raise CrossgradError("dense input must be h x w x channels", op="SparseData",
                           backend=backend, argument="dense", expected="rank 3",
                           actual=tuple(dense.shape))
    h, w, n = (int(d) for d in dense.shape)
    if ground_state is None:
      ground_state = xp.zeros((n,), dtype=dense.dtype)
    flat = xp.reshape(dense, (h * w, n))
    active = xp.any(xp.not_equal(flat, xp.reshape(ground_state, (1, n))), axis=1)
    count = xp.astype(active, xp.int32)
    n_valid = xp.sum(count, dtype=xp.int32)
    known = validation.concrete_values(n_valid)
    if capacity is None:
      capacity = max(1, int(known)) if known is not None else h * w
    elif known is not None and int(known) > capacity:
      raise CrossgradError("more active sites than the capacity", op="SparseData",
                           backend=backend, argument="capacity",
                           expected=f">= {int(known)}", actual=capacity)
    slot = xp.where(active, xp.cumulative_sum(count, axis=0, dtype=xp.int32) - 1, capacity)
    site = xp.segment_sum(xp.arange(h * w, dtype=xp.int32) + 1, slot, capacity) - 1
    grid = np.stack(np.divmod(np.arange(h * w, dtype=np.int32), np.int32(w)), 1)
    sites = xp.segment_sum(grid + 1, slot, capacity) - 1
    return cls(sites, xp.take(flat, site, axis=0), (h, w, n), ground_state,
               int(known) if known is not None else n_valid)

  def to_dense(self) -> Any:
    """The ``h x w x n`` dense array (differentiable in M and ground_state)."""
    xp = namespace(backend_of(self.M, self.ground_state))
    h, w, n = self.dense_shape
    rows = xp.reshape(xp.arange(self.capacity, dtype=xp.int32), (self.capacity, 1))
    valid = rows < xp.astype(xp.asarray(self.n_valid), xp.int32)
    where = xp.where(xp.reshape(valid, (-1,)),
                     self.H[:, 0] * w + self.H[:, 1], -1)
    hit = xp.segment_sum(xp.astype(valid, xp.int32), where, h * w) > 0  # h*w x 1
    values = xp.segment_sum(self.M, where, h * w)
    dense = xp.where(hit, values, xp.reshape(self.ground_state, (1, n)))
    return xp.reshape(dense, (h, w, n))

  def map(self, fn) -> SparseData:
    """The same sites with ``fn`` (elementwise, e.g. an activation) applied to ``M`` and
    the ground state alike; padding rows may then be nonzero, which no layer reads."""
    return SparseData.unflatten(self.dense_shape, (self.H, fn(self.M), fn(self.ground_state),
                                                   self.n_valid))

  def compact(self) -> SparseData:
    """This data with the padding cut off (needs concrete values: not under jit)."""
    n = validation.concrete_values(self.n_valid)
    if n is None:
      raise CrossgradError("compact() needs a concrete n_valid", op="SparseData",
                           argument="n_valid", expected="eager values",
                           actual="a traced value", hint="Keep the padded form under jit")
    xp = namespace(backend_of(self.M))
    keep = xp.arange(int(n), dtype=xp.int32)
    return SparseData(xp.take(self.H, keep, axis=0), xp.take(self.M, keep, axis=0),
                      self.dense_shape, self.ground_state, int(n))

  # Pytree protocols (registered with each backend as it is first used); rebuilding skips the
  # checks, since frameworks rebuild with placeholders.
  def flatten(self) -> tuple[tuple[Any, ...], tuple[int, int, int]]:
    return (self.H, self.M, self.ground_state, self.n_valid), self.dense_shape

  @classmethod
  def unflatten(cls, dense_shape, children) -> SparseData:
    x = object.__new__(cls)
    for name, value in zip(("H", "M", "ground_state", "n_valid"), children):
      object.__setattr__(x, name, value)
    object.__setattr__(x, "dense_shape", dense_shape)
    return x

  def __tf_flatten__(self):
    return self.dense_shape, self.flatten()[0]

  @classmethod
  def __tf_unflatten__(cls, dense_shape, components):
    return cls.unflatten(dense_shape, components)


def validate(x: SparseData, op: str = "SparseData"):
  """Shapes always; with concrete values also index ranges and duplicate sites."""
  backend = backend_of(x.M, x.H)
  h, w, n = x.dense_shape

  def fail(problem, argument, expected, actual):
    raise CrossgradError(problem, op=op, backend=backend, argument=argument,
                         expected=expected, actual=actual)

  if tuple(x.H.shape[1:]) != (2,) or len(x.H.shape) != 2:
    fail("H must list (row, col) per active site", "H", "int[a, 2]", tuple(x.H.shape))
  if len(x.M.shape) != 2 or x.M.shape[0] != x.H.shape[0]:
    fail("M needs one row per row of H", "M", f"[{x.H.shape[0]}, {n}]", tuple(x.M.shape))
  if x.M.shape[1] != n:
    fail("wrong channel count in M", "M", f"{n} channels (dense_shape {x.dense_shape})",
         int(x.M.shape[1]))
  if tuple(x.ground_state.shape) != (n,):
    fail("ground_state needs one value per channel", "ground_state", f"shape ({n},)",
         tuple(x.ground_state.shape))
  sites, count = validation.concrete_values(x.H), validation.concrete_values(x.n_valid)
  if sites is None or count is None:
    return
  if not 0 <= int(count) <= sites.shape[0]:
    fail("n_valid must count rows of H", "n_valid", f"0..{sites.shape[0]}", int(count))
  sites = sites[:int(count)].astype(np.int64)
  outside = (sites < 0).any(axis=1) | (sites[:, 0] >= h) | (sites[:, 1] >= w)
  if outside.any():
    fail("active site outside dense_shape", "H", f"rows in [0, {h}), cols in [0, {w})",
         f"site {sites[outside][0].tolist()} at row {int(np.argmax(outside))}")
  linear = sites[:, 0] * w + sites[:, 1]
  unique, first, counts = np.unique(linear, return_index=True, return_counts=True)
  if (counts > 1).any():
    dup = int(unique[counts > 1][0])
    fail("duplicate active site", "H", "each site once",
         f"site {[dup // w, dup % w]} listed {int(counts[counts > 1][0])} times "
         f"(first at row {int(first[counts > 1][0])})")
