"""Creation functions: ``zeros``, ``arange``, ``eye``, ``linspace``, ``tril``, ``from_dlpack``..."""

import builtins
import math

import numpy as np
import tensorflow as tf

from crossgrad.backends.tensorflow.namespace._dtypes import (
    _COMPLEX_FLOATING, _DEFAULTS, _INTEGRAL, _cast, _const, _device, _dtype, _host_ints, _index,
    _kind_default, _np_dtype, _py_complex, _py_float, _py_int, _py_max, _shape, _tensor,
    complex128, float64, iinfo)


def _shape_arg(shape):
  """A shape argument (an int, or a sequence such as a tuple or tf.TensorShape) as a list."""
  if isinstance(shape, tf.TensorShape):
    shape = shape.as_list()
  if not isinstance(shape, (tuple, list)):
    return [_index(shape, "shape")]
  return [_index(s, "shape") for s in shape]


def _fill_dtype(fill_value, dtype):
  if dtype is not None:
    return _dtype(dtype)
  if isinstance(fill_value, (tf.Tensor, tf.Variable, np.ndarray, np.generic)):
    return _dtype(fill_value.dtype)
  return _kind_default(fill_value)


def zeros(shape, *, dtype=None, device=None):
  with _device(device):
    return tf.zeros(_host_ints(_shape_arg(shape)), _dtype(dtype) or _DEFAULTS["real floating"])


def ones(shape, *, dtype=None, device=None):
  with _device(device):
    return tf.ones(_host_ints(_shape_arg(shape)), _dtype(dtype) or _DEFAULTS["real floating"])


def empty(shape, *, dtype=None, device=None):
  return zeros(shape, dtype=dtype, device=device)


def full(shape, fill_value, *, dtype=None, device=None):
  dtype = _fill_dtype(fill_value, dtype)
  with _device(device):
    return tf.fill(_host_ints(_shape_arg(shape)), _cast(fill_value, dtype))


def zeros_like(x, /, *, dtype=None, device=None):
  x = _tensor(x)
  with _device(device):
    return tf.zeros_like(x, dtype=_dtype(dtype) or x.dtype)


def ones_like(x, /, *, dtype=None, device=None):
  x = _tensor(x)
  with _device(device):
    return tf.ones_like(x, dtype=_dtype(dtype) or x.dtype)


def empty_like(x, /, *, dtype=None, device=None):
  return zeros_like(x, dtype=dtype, device=device)


def full_like(x, /, fill_value, *, dtype=None, device=None):
  x = _tensor(x)
  dtype = _dtype(dtype) or x.dtype
  with _device(device):
    return tf.fill(tf.shape(x), _cast(fill_value, dtype))


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
  if stop is None:
    start, stop = 0, start
  if dtype is None:
    dtype = (_DEFAULTS["real floating"]
             if builtins.any(isinstance(v, _py_float) for v in (start, stop, step))
             else _DEFAULTS["integral"])
  dtype = _dtype(dtype)
  if step == 0:
    raise ValueError("arange: step must not be 0")
  n = _py_max(_py_int(math.ceil((stop - start) / step)), 0)
  with _device(device):
    if dtype in _INTEGRAL:
      if n and not (iinfo(dtype).min <= start + (n - 1) * step <= iinfo(dtype).max):
        raise OverflowError(f"arange({start}, {stop}, {step}) overflows {dtype!r}")
      return tf.constant(np.arange(start, start + n * step, step, dtype=_np_dtype(dtype))[:n])
    i = tf.range(n, dtype=tf.float64)
    return tf.cast(tf.constant(start, tf.float64) + i * tf.constant(step, tf.float64), dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
  n_cols = n_rows if n_cols is None else n_cols
  with _device(device):
    diff = tf.range(n_cols)[None, :] - tf.range(n_rows)[:, None]
    return tf.cast(tf.equal(diff, k), _dtype(dtype) or _DEFAULTS["real floating"])


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
  is_complex = builtins.any(isinstance(v, _py_complex) and not isinstance(v, (_py_float, _py_int))
                            for v in (start, stop))
  dtype = _dtype(dtype) or _DEFAULTS["complex floating" if is_complex else "real floating"]
  wide = complex128 if dtype in _COMPLEX_FLOATING else float64
  num = _index(num, "num")
  div = (num - 1) if endpoint else num
  with _device(device):
    i = tf.cast(tf.range(num), wide)
    a, b = _const(start, wide), _const(stop, wide)
    step = (b - a) / tf.cast(_py_max(div, 1), wide)
    y = a + i * step
    if endpoint and num > 1:
      y = tf.concat([y[:-1], b[None]], 0)
    return tf.cast(y, dtype)


def meshgrid(*arrays, indexing="xy"):
  if indexing not in ("xy", "ij"):
    raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
  arrays = [_tensor(a) for a in arrays]
  if not arrays:
    return []
  if len(arrays) == 1:
    return [tf.identity(arrays[0])]
  return list(tf.meshgrid(*arrays, indexing=indexing))


def _band_mask(x, k, lower):
  shape = _shape(x)
  rows, cols = tf.range(shape[-2])[:, None], tf.range(shape[-1])[None, :]
  return (cols - rows <= k) if lower else (cols - rows >= k)


def tril(x, /, *, k=0):
  x = _tensor(x)
  return tf.where(_band_mask(x, k, True), x, tf.zeros_like(x))


def triu(x, /, *, k=0):
  x = _tensor(x)
  return tf.where(_band_mask(x, k, False), x, tf.zeros_like(x))


def _host_view(x):
  """A NumPy view of a CPU DLPack exporter, or None (a device buffer)."""
  try:
    return np.from_dlpack(x)
  except (BufferError, RuntimeError, TypeError, ValueError):
    return None


def from_dlpack(x, /, *, device=None, copy=None):
  """Imports a DLPack exporter. TF's CPU kernels abort on buffers that are not 64-byte aligned,
  as NumPy's often are, so those are copied (and refused with ``copy=False``)."""
  if isinstance(x, (tf.Tensor, tf.Variable)):
    with _device(device):
      return tf.identity(x) if copy or device is not None else tf.convert_to_tensor(x)
  host = _host_view(x)
  if host is not None and (copy or host.ctypes.data % 64):
    if copy is False:
      raise BufferError("from_dlpack(copy=False): the buffer is not 64-byte aligned for TF")
    with _device(device):
      return tf.constant(np.array(host, copy=True))
  y = tf.experimental.dlpack.from_dlpack(x.__dlpack__() if hasattr(x, "__dlpack__") else x)
  if device is not None:
    with tf.device(device):
      return tf.identity(y)
  return y
