"""Statistical and utility functions (reductions, cumulative sums, ``all``/``any``, ``diff``)."""

import builtins
import math

import tensorflow as tf

from crossgrad.backends.tensorflow.namespace import _raw
from crossgrad.backends.tensorflow.namespace._dtypes import (
    _SIGNED, _UNSIGNED, _const, _dtype, _index, _is_complex, _is_float, _norm_axis, _py_int,
    _reduce_axes, _reduction_axes, _shape, _tensor, astype, bool, int64, uint64)
from crossgrad.backends.tensorflow.namespace._elementwise import _nan_like
from crossgrad.backends.tensorflow.namespace._manipulation import concat


# Statistical and utility functions.

def _accumulation_dtype(x, dtype):
  if dtype is not None:
    return _dtype(dtype)
  if x.dtype in _SIGNED or x.dtype == bool:
    return int64
  if x.dtype in _UNSIGNED:
    return uint64
  return x.dtype


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  x = astype(x, _accumulation_dtype(x, dtype), copy=False)
  return _raw.reduce_sum(x, _reduction_axes(x, axis), keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
  x = _tensor(x)
  x = astype(x, _accumulation_dtype(x, dtype), copy=False)
  return tf.reduce_prod(x, _reduction_axes(x, axis), keepdims=keepdims)


def _extreme(x, axis, keepdims, largest):
  x = _tensor(x)
  axes = _reduce_axes(x, axis)
  if x.dtype == bool:
    return (tf.reduce_any if largest else tf.reduce_all)(x, axes, keepdims=keepdims)
  out = (tf.reduce_max if largest else tf.reduce_min)(x, axes, keepdims=keepdims)
  if _is_float(x):
    has_nan = tf.reduce_any(tf.math.is_nan(x), axes, keepdims=keepdims)
    out = tf.where(has_nan, _nan_like(out), out)
  return out


def max(x, /, *, axis=None, keepdims=False):  # pylint: disable=redefined-builtin
  return _extreme(x, axis, keepdims, True)


def min(x, /, *, axis=None, keepdims=False):  # pylint: disable=redefined-builtin
  return _extreme(x, axis, keepdims, False)


def mean(x, /, *, axis=None, keepdims=False):
  x = _tensor(x)
  return tf.reduce_mean(x, _reduction_axes(x, axis), keepdims=keepdims)


def _count(x, axes):
  sizes = [_shape(x)[a] for a in axes]
  if builtins.all(isinstance(s, _py_int) for s in sizes):
    return math.prod(sizes)
  return tf.reduce_prod(tf.stack([tf.cast(s, int64) for s in sizes]))


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
  x = _tensor(x)
  axes = _reduce_axes(x, axis)
  centered = x - tf.reduce_mean(x, axes, keepdims=True)
  squares = tf.math.real(centered * tf.math.conj(centered)) if _is_complex(x) else tf.math.square(
      centered)
  total = tf.reduce_sum(squares, axes, keepdims=keepdims)
  dof = tf.cast(_count(x, axes), total.dtype) - _const(correction, total.dtype)
  out = total / tf.where(dof > 0, dof, tf.ones_like(dof))
  return tf.where(dof > 0, out, _nan_like(out))


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
  return tf.math.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def _cumulative(fn, identity, x, axis, dtype, include_initial):
  x = _tensor(x)
  if axis is None:
    if x.shape.rank > 1:
      raise ValueError("cumulative functions need an axis for arrays with more than one dim")
    axis = 0
  axis = _norm_axis(axis, x.shape.rank)[0]
  x = astype(x, _accumulation_dtype(x, dtype), copy=False)
  if include_initial:
    shape = _shape(x)
    shape[axis] = 1
    x = tf.concat([tf.fill(shape, tf.constant(identity, x.dtype)), x], axis)
  if x.dtype in (tf.int32, tf.int64) or x.dtype.is_floating or x.dtype.is_complex:
    return fn(x, axis=axis)
  # XLA has no cumsum/cumprod of 8/16-bit or unsigned integers: int64 carries the same bits
  # (modular arithmetic wraps alike), bitcast for uint64.
  if x.dtype == tf.uint64:
    return tf.bitcast(fn(tf.bitcast(x, tf.int64), axis=axis), tf.uint64)
  return tf.cast(fn(tf.cast(x, tf.int64), axis=axis), x.dtype)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  return _cumulative(tf.math.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  return _cumulative(tf.math.cumprod, 1, x, axis, dtype, include_initial)


def _truth(x):
  return x if x.dtype == bool else tf.not_equal(x, tf.zeros([], x.dtype))


def all(x, /, *, axis=None, keepdims=False):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  return tf.reduce_all(_truth(x), _reduction_axes(x, axis), keepdims=keepdims)


def any(x, /, *, axis=None, keepdims=False):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  return tf.reduce_any(_truth(x), _reduction_axes(x, axis), keepdims=keepdims)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
  x = _tensor(x)
  axis = _norm_axis(axis, x.shape.rank)[0]
  parts = [p for p in (prepend, x, append) if p is not None]
  if len(parts) > 1:
    x = concat(parts, axis=axis)
  head = (slice(None),) * axis
  for _ in range(_index(n, "n")):
    later, earlier = x[head + (slice(1, None),)], x[head + (slice(None, -1),)]
    x = tf.not_equal(later, earlier) if x.dtype == bool else later - earlier
  return x
