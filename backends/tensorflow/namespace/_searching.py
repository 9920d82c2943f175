"""Sorting, searching and set functions (NaN last, -0 and +0 in input order)."""

import collections
import math

import numpy as np
import tensorflow as tf

from crossgrad.backends.tensorflow.namespace import _raw
from crossgrad.backends.tensorflow.namespace._dtypes import (
    _DEFAULTS, _FLOATING, _INTEGRAL, _SIGNED, _cast, _is_complex, _is_float, _norm_axis,
    _np_dtype, _promote, _reduce_axes, _shape, _tensor, bool, float32, float64, int16, int32,
    int64, int8, uint16, uint32, uint64, uint8)
from crossgrad.backends.tensorflow.namespace._elementwise import _nan_like
from crossgrad.backends.tensorflow.namespace._manipulation import take_along_axis


# Sorting and searching.

def _sort_key(x):
  """A signed-integer key ordered as ``x``: NaN last, -0 equal to +0 (floats, ints, bool)."""
  d = x.dtype
  if d == bool:
    return tf.cast(x, int8)
  if d in (uint8, uint16):
    return tf.cast(x, int32)
  if d == uint32:
    return tf.cast(x, int64)
  if d == uint64:
    return tf.bitcast(tf.bitwise.bitwise_xor(x, tf.constant(1 << 63, uint64)), int64)
  if d in _FLOATING:  # float16 and bfloat16 too: sign and magnitude, as float32's bits.
    canonical = tf.where(tf.math.is_nan(x), _nan_like(x),
                         tf.where(tf.equal(x, 0), tf.zeros_like(x), x))
    itype = {float32: int32, float64: int64}.get(d, int16)
    bits = tf.bitcast(canonical, itype)
    flip = tf.constant(np.iinfo(_np_dtype(itype)).max, itype)
    return tf.where(tf.less(bits, 0), tf.bitwise.bitwise_xor(bits, flip), bits)
  if d in _INTEGRAL:
    return x
  raise TypeError(f"sorting needs a real-valued dtype, got {d!r}")


def argsort(x, /, *, axis=-1, descending=False, stable=True):
  x = _tensor(x)
  axis = _norm_axis(axis, x.shape.rank)[0]
  key = _sort_key(x)
  out = tf.argsort(key, axis=axis, direction="DESCENDING" if descending else "ASCENDING",
                   stable=True)
  return tf.cast(out, _DEFAULTS["indexing"])


def sort(x, /, *, axis=-1, descending=False, stable=True):
  x = _tensor(x)
  if x.shape.rank == 0:
    return x
  axis = _norm_axis(axis, x.shape.rank)[0]
  if x.dtype in _SIGNED:
    return tf.sort(x, axis=axis, direction="DESCENDING" if descending else "ASCENDING")
  return take_along_axis(x, argsort(x, axis=axis, descending=descending), axis=axis)


def _arg_extreme(x, axis, keepdims, largest):
  x = _tensor(x)
  rank = x.shape.rank
  if axis is None:
    flat = tf.reshape(x, [-1])
    out = _arg_extreme(flat, 0, False, largest)
    return tf.reshape(out, [1] * rank) if keepdims else out
  axis = _norm_axis(axis, rank)[0]
  key = _sort_key(x) if x.dtype not in _SIGNED else x
  if _is_float(x):  # Keys put NaN last; argmin must still find the first NaN.
    extreme = tf.constant(key.dtype.max if largest else key.dtype.min, key.dtype)
    key = tf.where(tf.math.is_nan(x), tf.fill(tf.shape(key), extreme), key)
  fn = tf.math.argmax if largest else tf.math.argmin
  shape = _shape(x)  # As (before, n, after): TF's ArgMax kernel stops at 7 dimensions.
  three = [math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])]
  out = fn(tf.reshape(key, three), axis=1, output_type=_DEFAULTS["indexing"])
  out = tf.reshape(out, shape[:axis] + shape[axis + 1:])
  return tf.expand_dims(out, axis) if keepdims else out


def argmax(x, /, *, axis=None, keepdims=False):
  return _arg_extreme(x, axis, keepdims, True)


def argmin(x, /, *, axis=None, keepdims=False):
  return _arg_extreme(x, axis, keepdims, False)


def count_nonzero(x, /, *, axis=None, keepdims=False):
  x = _tensor(x)
  nonzero_ = tf.not_equal(x, tf.zeros([], x.dtype)) if x.dtype != bool else x
  return tf.reduce_sum(tf.cast(nonzero_, _DEFAULTS["indexing"]), _reduce_axes(x, axis),
                       keepdims=keepdims)


def nonzero(x, /):
  x = _tensor(x)
  if x.shape.rank == 0:
    raise ValueError("nonzero needs an array with at least one dimension")
  mask = tf.not_equal(x, tf.zeros([], x.dtype)) if x.dtype != bool else x
  where_ = tf.where(mask)
  return tuple(tf.cast(where_[:, i], _DEFAULTS["indexing"]) for i in range(x.shape.rank))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
  if side not in ("left", "right"):
    raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
  x1 = _tensor(x1)
  if sorter is not None:
    x1 = tf.gather(x1, _tensor(sorter))
  x1, x2 = _promote(x1, x2)
  shape = _shape(x2)
  found = tf.searchsorted(_sort_key(x1), tf.reshape(_sort_key(x2), [-1]), side=side,
                          out_type=_DEFAULTS["indexing"])
  return tf.reshape(found, shape)


def where(condition, x1, x2, /):
  x1, x2 = _promote(x1, x2)
  return _raw.select(_cast(condition, bool), x1, x2)


# ---------------------------------------------------------------------------------------------
# Set functions (data-dependent output shapes: eager and tf.function graphs, not XLA).

_UniqueAllResult = collections.namedtuple(
    "UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
_UniqueCountsResult = collections.namedtuple("UniqueCountsResult", ["values", "counts"])
_UniqueInverseResult = collections.namedtuple("UniqueInverseResult",
                                              ["values", "inverse_indices"])


def _stable_order(flat):
  """A stable ascending order of a 1-D array (complex: by real part, then imaginary)."""
  if _is_complex(flat):
    by_imag = tf.argsort(_sort_key(tf.math.imag(flat)), stable=True)
    by_real = tf.argsort(_sort_key(tf.gather(tf.math.real(flat), by_imag)), stable=True)
    return tf.gather(by_imag, by_real)
  return tf.argsort(_sort_key(flat), stable=True)


def _unique(x):
  x = _tensor(x)
  flat = tf.reshape(x, [-1])
  order = tf.cast(_stable_order(flat), int64)
  ordered = tf.gather(flat, order)
  position = tf.range(tf.size(flat, out_type=int64))
  starts = tf.logical_or(tf.equal(position, 0),
                         tf.not_equal(ordered, tf.roll(ordered, 1, 0)))
  group = tf.cumsum(tf.cast(starts, int64)) - 1
  values = tf.boolean_mask(ordered, starts)
  first = tf.boolean_mask(order, starts)
  inverse = tf.reshape(tf.gather(group, tf.math.invert_permutation(order)), _shape(x))
  counts = tf.math.segment_sum(tf.ones_like(group), group)
  return values, first, inverse, counts


def unique_all(x, /):
  return _UniqueAllResult(*_unique(x))


def unique_counts(x, /):
  values, _, _, counts = _unique(x)
  return _UniqueCountsResult(values, counts)


def unique_inverse(x, /):
  values, _, inverse, _ = _unique(x)
  return _UniqueInverseResult(values, inverse)


def unique_values(x, /):
  return _unique(x)[0]
