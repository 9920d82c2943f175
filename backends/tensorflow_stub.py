"""Stand-in for `tensorflow_array_api` (issue 13): the standard's names the built-in ops use.

Temporary: the full Array API 2024.12 namespace for TensorFlow is written separately as
``backends/tensorflow_array_api.py``; when it lands, ``backends/tensorflow.py`` imports
it instead and this file goes. Core TF ops only, XLA-compilable, no NumPy behaviour.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

__array_api_version__ = "2024.12"

bool = tf.bool  # pylint: disable=redefined-builtin
int8, int16, int32, int64 = tf.int8, tf.int16, tf.int32, tf.int64
uint8, uint16, uint32, uint64 = tf.uint8, tf.uint16, tf.uint32, tf.uint64
float32, float64, complex64, complex128 = tf.float32, tf.float64, tf.complex64, tf.complex128
e, inf, nan, pi, newaxis = np.e, np.inf, np.nan, np.pi, None


def _is_tensor(x) -> bool:
  return isinstance(x, (tf.Tensor, tf.Variable, np.ndarray, np.generic))


def _coerce(*values):
  """Python scalars take the dtype of the first array among ``values`` (weak scalars)."""
  dtype = next((tf.as_dtype(v.dtype) for v in values if _is_tensor(v)), None)
  return [v if _is_tensor(v) or dtype is None else tf.constant(v, dtype) for v in values]


def _binary(fn):
  return lambda x1, x2, /: fn(*_coerce(x1, x2))


def _reduction(fn):
  def reduce(x, /, *, axis=None, dtype=None, keepdims=False):
    x = tf.convert_to_tensor(x)
    return fn(x if dtype is None else tf.cast(x, dtype), axis=axis, keepdims=keepdims)
  return reduce


def _nan_reduction(fn):
  """max/min that return NaN where the input has one (XLA's skip NaN on CPU)."""
  def reduce(x, /, *, axis=None, keepdims=False):
    x = tf.convert_to_tensor(x)
    out = fn(x, axis=axis, keepdims=keepdims)
    if not x.dtype.is_floating:
      return out
    nan_here = tf.reduce_any(tf.math.is_nan(x), axis=axis, keepdims=keepdims)
    return tf.where(nan_here, tf.constant(float("nan"), out.dtype), out)
  return reduce


abs = tf.abs  # pylint: disable=redefined-builtin
negative, sign, exp, sqrt, square, tanh = tf.negative, tf.sign, tf.exp, tf.sqrt, tf.square, tf.tanh
log, floor, ceil = tf.math.log, tf.floor, tf.math.ceil
round = tf.round  # pylint: disable=redefined-builtin  # Half to even.
maximum, minimum = _binary(tf.maximum), _binary(tf.minimum)
less, less_equal = _binary(tf.less), _binary(tf.less_equal)
greater, greater_equal = _binary(tf.greater), _binary(tf.greater_equal)
equal, not_equal = _binary(tf.equal), _binary(tf.not_equal)
logical_and, logical_or, logical_not = tf.logical_and, tf.logical_or, tf.logical_not
bitwise_xor, bitwise_or = _binary(tf.bitwise.bitwise_xor), _binary(tf.bitwise.bitwise_or)
bitwise_left_shift = _binary(tf.bitwise.left_shift)
bitwise_right_shift = _binary(tf.bitwise.right_shift)
# pylint: disable-next=redefined-builtin
sum, mean = _reduction(tf.reduce_sum), _reduction(tf.reduce_mean)
# pylint: disable-next=redefined-builtin
max, min = _nan_reduction(tf.reduce_max), _nan_reduction(tf.reduce_min)


def any(x, /, *, axis=None, keepdims=False):  # pylint: disable=redefined-builtin
  return tf.reduce_any(tf.cast(x, tf.bool), axis=axis, keepdims=keepdims)


def where(condition, x1, x2, /):
  return tf.where(condition, *_coerce(x1, x2))


def clip(x, /, min=None, max=None):  # pylint: disable=redefined-builtin
  x = tf.convert_to_tensor(x)
  if min is not None:
    x = tf.maximum(x, tf.cast(min, x.dtype))
  if max is not None:
    x = tf.minimum(x, tf.cast(max, x.dtype))
  return x


def reshape(x, /, shape, *, copy=None):
  del copy
  return tf.reshape(x, shape)


def matrix_transpose(x, /):
  return tf.linalg.matrix_transpose(x)


def permute_dims(x, /, axes):
  return tf.transpose(x, perm=axes)


def broadcast_to(x, /, shape):
  return tf.broadcast_to(x, shape)


def expand_dims(x, /, axis=0):
  return tf.expand_dims(x, axis)


def matmul(x1, x2, /):
  return tf.linalg.matmul(x1, x2)


def concat(arrays, /, *, axis=0):
  return tf.concat(arrays, axis)


def cumulative_sum(x, /, *, axis=None, dtype=None):
  x = tf.convert_to_tensor(x)
  return tf.cumsum(x if dtype is None else tf.cast(x, dtype), axis=0 if axis is None else axis)


def astype(x, dtype, /, *, copy=True, device=None):
  del copy, device
  return tf.cast(x, dtype)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
  del device, copy
  return tf.convert_to_tensor(obj, dtype=dtype)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
  del device
  return tf.range(start, stop, step, dtype=dtype or tf.int64)


def zeros(shape, *, dtype=None, device=None):
  del device
  return tf.zeros(shape, dtype or tf.float32)


def ones(shape, *, dtype=None, device=None):
  del device
  return tf.ones(shape, dtype or tf.float32)


def zeros_like(x, /, *, dtype=None, device=None):
  del device
  return tf.zeros_like(x, dtype=dtype)


def ones_like(x, /, *, dtype=None, device=None):
  del device
  return tf.ones_like(x, dtype=dtype)


def full_like(x, /, fill_value, *, dtype=None, device=None):
  del device
  x = tf.convert_to_tensor(x)
  return tf.fill(tf.shape(x), tf.cast(fill_value, dtype or x.dtype))
