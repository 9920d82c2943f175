"""The NumPy-style namespace ``xp`` that op definitions are written against.

`FUNCTIONS` is the one documented list: every backend implements exactly these names
with NumPy's semantics, so an op written with them means the same thing everywhere.
Arrays also support ``+ - * / ** @``, unary ``-``, comparisons and ``.shape``.
Python scalars mixed with arrays take the array's dtype (NumPy 2 "weak" scalars).
Dtypes are given as names ("float32") or taken from an array (``x.dtype``).

Bad indices: every crossgrad op that indexes reads an index outside ``[0, n)`` -
negative ones included - as a zero value (and so sends it no gradient), on every
backend and device. Frameworks disagree here (TensorFlow's `tf.gather` raises on CPU,
returns zeros on GPU and clamps under XLA; `jnp.take` wraps negative indices and fills
NaN or clamps by mode; NumPy raises), so ops index only through ``xp.take``, which
implements the rule the same way everywhere and never raises on data.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from crossgrad.registry.errors import CrossgradError

FUNCTIONS: dict[str, str] = {
    # Elementwise arithmetic.
    "abs": "abs(x)",
    "negative": "negative(x)",
    "sign": "sign(x)",
    "exp": "exp(x)",
    "log": "log(x)",
    "sqrt": "sqrt(x)",
    "square": "square(x)",
    "tanh": "tanh(x)",
    "maximum": "maximum(a, b)",
    "minimum": "minimum(a, b)",
    "round": "round(x): half to even, as numpy.round",
    "floor": "floor(x)",
    "ceil": "ceil(x)",
    "clip": "clip(x, lo, hi): either bound may be None",
    "where": "where(cond, a, b)",
    # Comparisons and logic (boolean results).
    "less": "less(a, b)",
    "less_equal": "less_equal(a, b)",
    "greater": "greater(a, b)",
    "greater_equal": "greater_equal(a, b)",
    "equal": "equal(a, b)",
    "logical_and": "logical_and(a, b)",
    "logical_or": "logical_or(a, b)",
    "logical_not": "logical_not(x)",
    # Bitwise, on unsigned integers (right_shift is logical).
    "bitwise_xor": "bitwise_xor(a, b)",
    "bitwise_or": "bitwise_or(a, b)",
    "left_shift": "left_shift(x, n)",
    "right_shift": "right_shift(x, n)",
    # Reductions.
    "sum": "sum(x, axis=None, keepdims=False)",
    "mean": "mean(x, axis=None, keepdims=False)",
    "max": "max(x, axis=None, keepdims=False)",
    "min": "min(x, axis=None, keepdims=False)",
    # Shapes and linear algebra.
    "reshape": "reshape(x, shape)",
    "transpose": "transpose(x, axes=None)",
    "broadcast_to": "broadcast_to(x, shape)",
    "unbroadcast": "unbroadcast(x, like): x summed over the axes along which `like` was "
                   "broadcast to x's shape, so the result has like's shape (the adjoint of "
                   "broadcast_to, for cotangents of broadcast inputs)",
    "expand_dims": "expand_dims(x, axis)",
    "matmul": "matmul(a, b)",
    # Indexing: see "Bad indices" below.
    "take": "take(x, indices, axis=0): x's slices at integer indices; zeros where an "
            "index is outside [0, x.shape[axis])",
    # Creation and casts.
    "zeros_like": "zeros_like(x)",
    "ones_like": "ones_like(x)",
    "full_like": "full_like(x, value)",
    "zeros": "zeros(shape, dtype)",
    "ones": "ones(shape, dtype)",
    "astype": "astype(x, dtype)",
    # Indexing.
    "one_hot": "one_hot(labels, depth, dtype): labels (...,) integer -> (..., depth), 1 where "
               "labels == k; all zeros for labels outside [0, depth)",
    "arange": "arange(n, dtype): 0, 1, ..., n - 1",
    "concatenate": "concatenate(arrays, axis=0)",
    "cumsum": "cumsum(x, axis): keeps x's dtype",
    # Gathers and their transposes. An index outside [0, n) is never an error: `take`
    # reads a zero row there and the segment reductions drop that row, in every backend
    # and mode (so `segment_sum` is exactly the transpose of `take`).
    "segment_sum": "segment_sum(data, segment_ids, num_segments): row sums along axis 0; "
                   "rows with an id outside [0, num_segments) are dropped",
    "segment_min": "segment_min(data, segment_ids, num_segments): as segment_sum; empty "
                   "segments hold the dtype's largest finite value",
}


class Namespace:
  """A backend's implementation of `FUNCTIONS`; any other name is a clear error."""

  def __init__(self, backend: str, table: Mapping[str, Callable[..., Any]]):
    missing = sorted(set(FUNCTIONS) - set(table))
    extra = sorted(set(table) - set(FUNCTIONS))
    if missing or extra:
      raise CrossgradError("namespace does not match the documented list", backend=backend,
                           argument="table", expected="exactly the documented names",
                           actual=f"missing {missing}, extra {extra}")
    self._backend = backend
    self.__dict__.update(table)

  @property
  def backend(self) -> str:
    return self._backend

  def __getattr__(self, name: str):
    if name.startswith("__"):
      raise AttributeError(name)
    raise CrossgradError(
        f"xp.{name} is not in crossgrad's op namespace", backend=self._backend,
        argument=f"xp.{name}", hint="Allowed: " + ", ".join(sorted(FUNCTIONS)) +
        " (see crossgrad.registry.namespace.FUNCTIONS)")

  def __dir__(self):
    return sorted(FUNCTIONS)

  def __repr__(self) -> str:
    return f"<crossgrad {self._backend} namespace>"
