"""The ``fft`` extension: ``tf.signal`` along the last axis; other axes are moved there and back."""

import math
import types

import numpy as np
import tensorflow as tf

from crossgrad.backends.tensorflow.namespace._dtypes import (
    _COMPLEX_OF, _DEFAULTS, _REAL_OF, _device, _dtype, _index, _is_complex, _norm_axis,
    _reduce_axes, _shape, _tensor, complex128)
from crossgrad.backends.tensorflow.namespace._elementwise import conj
from crossgrad.backends.tensorflow.namespace._manipulation import _from_last, _move_to_last


# The fft extension (tf.signal along the last axis; other axes are moved there and back).

_NORMS = ("backward", "ortho", "forward")


def _fft_scale(y, n, norm, inverse):
  """Scales an unnormalized transform of length ``n`` for ``norm``."""
  if norm not in _NORMS:
    raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}")
  if norm == "ortho":
    return y * tf.constant(1 / math.sqrt(n), y.dtype)
  return y * tf.constant(1 / n, y.dtype) if (norm == "forward") != inverse else y


def _fit(v, n):
  """``v`` cropped or zero-padded to length ``n`` along its last axis."""
  size = _shape(v)[-1]
  if n is None or n == size:
    return v
  if n < size:
    return v[..., :n]
  return tf.pad(v, [[0, 0]] * (v.shape.rank - 1) + [[0, n - size]])


def _along(fn, x, axis):
  axis = _norm_axis(axis, x.shape.rank)[0]
  if axis == x.shape.rank - 1:
    return fn(x)
  moved, perm = _move_to_last(x, axis)
  return _from_last(fn(moved), perm)


def _complex_input(x):
  x = _tensor(x)
  return x if _is_complex(x) else tf.cast(x, _COMPLEX_OF.get(x.dtype, complex128))


def _c2c(x, n, axis, norm, inverse):
  def transform(v):
    v = _fit(v, n)
    length = _shape(v)[-1]
    y = tf.signal.ifft(v) * tf.constant(length, v.dtype) if inverse else tf.signal.fft(v)
    return _fft_scale(y, length, norm, inverse)
  return _along(transform, _complex_input(x), axis)


def _r2c(x, n, axis, norm):
  def transform(v):
    v = _fit(v, n)
    length = _shape(v)[-1]
    y = tf.signal.rfft(v, [length])
    return _fft_scale(y, length, norm, False)
  return _along(transform, _tensor(x), axis)


def _c2r(x, n, axis, norm):
  def transform(v):
    length = 2 * (_shape(v)[-1] - 1) if n is None else n
    v = _fit(v, length // 2 + 1)
    y = tf.signal.irfft(v, [length]) * tf.constant(length, _REAL_OF[v.dtype])
    return _fft_scale(y, length, norm, True)
  return _along(transform, _complex_input(x), axis)


def _fft_fft(x, /, *, n=None, axis=-1, norm="backward"):
  return _c2c(x, n, axis, norm, False)


def _fft_ifft(x, /, *, n=None, axis=-1, norm="backward"):
  return _c2c(x, n, axis, norm, True)


def _fft_rfft(x, /, *, n=None, axis=-1, norm="backward"):
  return _r2c(x, n, axis, norm)


def _fft_irfft(x, /, *, n=None, axis=-1, norm="backward"):
  return _c2r(x, n, axis, norm)


_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _fft_hfft(x, /, *, n=None, axis=-1, norm="backward"):
  return _c2r(conj(_complex_input(x)), n, axis, _SWAP.get(norm, norm))


def _fft_ihfft(x, /, *, n=None, axis=-1, norm="backward"):
  return conj(_r2c(x, n, axis, _SWAP.get(norm, norm)))


def _nd_axes(x, s, axes):
  if axes is None:
    axes = list(range(x.shape.rank)) if s is None else list(range(-len(s), 0))
  axes = _norm_axis(tuple(axes), x.shape.rank) if axes else []
  s = [None] * len(axes) if s is None else [None if v == -1 else v for v in s]
  return axes, s


def _fft_fftn(x, /, *, s=None, axes=None, norm="backward"):
  x = _complex_input(x)
  for axis, n in zip(*_nd_axes(x, s, axes)):
    x = _c2c(x, n, axis, norm, False)
  return x


def _fft_ifftn(x, /, *, s=None, axes=None, norm="backward"):
  x = _complex_input(x)
  for axis, n in zip(*_nd_axes(x, s, axes)):
    x = _c2c(x, n, axis, norm, True)
  return x


def _fft_rfftn(x, /, *, s=None, axes=None, norm="backward"):
  x = _tensor(x)
  axes, s = _nd_axes(x, s, axes)
  x = _r2c(x, s[-1], axes[-1], norm)
  for axis, n in zip(axes[:-1], s[:-1]):
    x = _c2c(x, n, axis, norm, False)
  return x


def _fft_irfftn(x, /, *, s=None, axes=None, norm="backward"):
  x = _complex_input(x)
  axes, s = _nd_axes(x, s, axes)
  for axis, n in zip(axes[:-1], s[:-1]):
    x = _c2c(x, n, axis, norm, True)
  return _c2r(x, s[-1], axes[-1], norm)


def _fft_fftfreq(n, /, *, d=1.0, dtype=None, device=None):
  n = _index(n, "n")
  k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
  with _device(device):
    return tf.constant(k / (d * n), _dtype(dtype) or _DEFAULTS["real floating"])


def _fft_rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
  n = _index(n, "n")
  with _device(device):
    return tf.constant(np.arange(0, n // 2 + 1) / (d * n),
                       _dtype(dtype) or _DEFAULTS["real floating"])


def _shift(x, axes, sign):
  x = _tensor(x)
  axes = _reduce_axes(x, axes)
  shape = _shape(x)
  return tf.roll(x, [sign * (shape[a] // 2) for a in axes], axes) if axes else x


def _fft_fftshift(x, /, *, axes=None):
  return _shift(x, axes, 1)


def _fft_ifftshift(x, /, *, axes=None):
  return _shift(x, axes, -1)


fft = types.SimpleNamespace(**{name[len("_fft_"):]: fn for name, fn in dict(globals()).items()
                               if name.startswith("_fft_") and name != "_fft_scale"})
for _name, _fn in vars(fft).items():
  _fn.__name__ = _fn.__qualname__ = _name
del _name, _fn
