"""The Python Array API standard, revision 2024.12, written with core TensorFlow ops.

A module namespace: ``xp.sum``, ``xp.linalg.solve``, ``xp.float32``... taking and returning
plain ``tf.Tensor`` (no wrapper class), so ``tf.custom_gradient`` sees real tensors. It never
switches on ``tf.experimental.numpy``'s NumPy behaviour and never relies on it.

Choices the standard leaves to the implementation:

- Default dtypes: float32 (real floating), complex64 (complex floating), int64 (integral and
  indexing), as in PyTorch: TensorFlow's float32 default, NumPy's 64-bit indices. A Python float
  becomes float32 (``asarray(1.5)``); ``argmax``, ``nonzero``, ``unique_*``, ``searchsorted``
  return int64; ``sum``/``prod``/``cumulative_*`` of signed (unsigned) integers give int64
  (uint64).
- Type promotion: the standard's table; across kinds (bool/int/uint/float/complex) NumPy 2's
  ``result_type`` (int32 with float32 gives float64, int64 with uint64 gives float64, bool with
  int gives the int). Python scalars are "weak": they take the array's dtype when their kind
  fits (``x_f32 * 2.0`` stays float32, ``x_i8 + 1`` stays int8); across kinds NumPy 2 decides
  (an int array with a Python float gives float64). Integer ``divide`` gives float64 as in NumPy.
- Integer division by zero gives 0 (``floor_divide`` and ``remainder``); integer ``pow`` with a
  negative exponent truncates ``1 / x1**-x2`` toward zero; shifts by the bit width or more give 0
  (or -1 for negative ``x1`` shifted right): the same eagerly and under XLA.
- NaN: ``maximum``/``minimum``/``max``/``min`` propagate NaN; ``sort``/``argsort`` put NaN last
  (first when descending) and keep -0 and +0 in input order; ``searchsorted`` uses the same
  order; ``argmax``/``argmin`` return the first NaN. Eager TensorFlow and XLA disagree on all
  of these natively; here they agree.
- Devices are TensorFlow device strings (``x.device``); ``device=`` places the result there.

Compilation: every function works in ``tf.function(jit_compile=True)`` for static shapes,
except those whose output shape depends on values (``nonzero``, ``unique_*``, ``repeat`` with
an array of repeats), which work eagerly and in ``tf.function`` graphs. TensorFlow's XLA
bridge has no complex SVD, so ``linalg.svd``/``svdvals``/``pinv``/``matrix_rank`` and the
``2``/``-2``/``"nuc"`` matrix norms of complex matrices are eager/graph only; ``det`` and
``slogdet`` use their own partial-pivoting elimination (XLA has no LU), and complex ``eigh``
recovers eigenvalues from eigenvectors (TensorFlow's XLA complex eigenvalues are wrong).
Tensors cannot be mutated in place and do not support boolean-mask indexing; both are
array-object behaviour outside this namespace. The ``fft`` extension applies ``tf.signal`` along
one axis at a time.
"""

import builtins
import collections
import contextlib
import math
import operator
import types

import numpy as np
import tensorflow as tf

_py_bool, _py_int, _py_float, _py_complex = (builtins.bool, builtins.int, builtins.float,
                                             builtins.complex)
_py_max, _py_min, _py_abs = builtins.max, builtins.min, builtins.abs

__array_api_version__ = "2024.12"

# Data types: TensorFlow's own DType objects, so ``xp.float32 == x.dtype``.
bool = tf.bool  # pylint: disable=redefined-builtin
int8, int16, int32, int64 = tf.int8, tf.int16, tf.int32, tf.int64
uint8, uint16, uint32, uint64 = tf.uint8, tf.uint16, tf.uint32, tf.uint64
float32, float64 = tf.float32, tf.float64
complex64, complex128 = tf.complex64, tf.complex128

e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None

_SIGNED = (int8, int16, int32, int64)
_UNSIGNED = (uint8, uint16, uint32, uint64)
_INTEGRAL = _SIGNED + _UNSIGNED
_REAL_FLOATING = (float32, float64)
_COMPLEX_FLOATING = (complex64, complex128)
_DTYPES = (bool,) + _INTEGRAL + _REAL_FLOATING + _COMPLEX_FLOATING
_DEFAULTS = {"real floating": float32, "complex floating": complex64, "integral": int64,
             "indexing": int64}
_KINDS = {
    "bool": (bool,), "signed integer": _SIGNED, "unsigned integer": _UNSIGNED,
    "integral": _INTEGRAL, "real floating": _REAL_FLOATING,
    "complex floating": _COMPLEX_FLOATING,
    "numeric": _INTEGRAL + _REAL_FLOATING + _COMPLEX_FLOATING,
}
_SIGNED_OF = {uint8: int8, uint16: int16, uint32: int32, uint64: int64}
_REAL_OF = {complex64: float32, complex128: float64}
_COMPLEX_OF = {float32: complex64, float64: complex128}


# ---------------------------------------------------------------------------------------------
# Helpers: dtypes, Python scalars, promotion, axes.

def _dtype(d):
  """A standard dtype from a dtype-like (tf.DType, NumPy dtype or name); None stays None."""
  if d is None:
    return None
  try:
    d = tf.as_dtype(d)
  except TypeError as err:
    raise TypeError(f"not a dtype: {d!r}") from err
  if d not in _DTYPES and d not in (tf.float16, tf.bfloat16):  # Beyond the standard, allowed.
    raise TypeError(f"{d!r} is not an Array API dtype")
  return d


def _is_scalar(v) -> _py_bool:
  return isinstance(v, (_py_bool, _py_int, _py_float, _py_complex)) and not isinstance(
      v, np.generic)


def _tensor(x):
  """``x`` as a tf.Tensor (Variables are read, NumPy arrays converted with their dtype)."""
  if isinstance(x, tf.Tensor):
    return x
  if isinstance(x, (tf.Variable, np.ndarray, np.generic)) or hasattr(x, "__tf_tensor__"):
    return tf.convert_to_tensor(x)
  return asarray(x)


def _np_dtype(d):
  return np.dtype(tf.as_dtype(d).as_numpy_dtype)


def _const(value, dtype):
  """A Python scalar as a tensor of ``dtype`` (NumPy's rules: out-of-range ints raise)."""
  if dtype == bool:
    return tf.constant(_py_bool(value))
  return tf.constant(np.asarray(value, dtype=_np_dtype(dtype)))


def _kind_default(v):
  if isinstance(v, _py_bool):
    return bool
  if isinstance(v, _py_int):
    return _DEFAULTS["integral"]
  if isinstance(v, _py_float):
    return _DEFAULTS["real floating"]
  return _DEFAULTS["complex floating"]


def _cast(x, dtype):
  """``x`` (array or Python scalar) as a tensor of ``dtype``."""
  if _is_scalar(x):
    return _const(x, dtype)
  x = _tensor(x)
  return x if x.dtype == dtype else tf.cast(x, dtype)


def _promote(*args):
  """The arguments as tensors of their common dtype (Python scalars are weak)."""
  dtype = result_type(*args)
  return [_cast(a, dtype) for a in args]


def _index(v, name="value"):
  try:
    return operator.index(v)
  except TypeError as err:
    raise TypeError(f"{name} must be an integer, got {v!r}") from err


def _norm_axis(axis, ndim):
  """``axis`` (int or tuple; may be negative) as a list of distinct axes in [0, ndim)."""
  axes = axis if isinstance(axis, (tuple, list)) else (axis,)
  out = []
  for a in axes:
    a = _index(a, "axis")
    if not -ndim <= a < ndim:
      raise IndexError(f"axis {a} is out of range for an array with {ndim} dimensions")
    out.append(a % ndim)
  if len(set(out)) != len(out):
    raise ValueError(f"repeated axis in {axis!r}")
  return out


def _reduce_axes(x, axis):
  """Axes for tf.reduce_*: all of them for None, a list otherwise."""
  return list(range(x.shape.rank)) if axis is None else _norm_axis(axis, x.shape.rank)


def _shape(x):
  """Static sizes where known, dynamic scalars where not."""
  static = x.shape.as_list()
  if None not in static:
    return static
  dynamic = tf.shape(x)
  return [s if s is not None else dynamic[i] for i, s in enumerate(static)]


def _device(device):
  return contextlib.nullcontext() if device is None else tf.device(device)


def _via_signed(fn, x, *args, **kwargs):
  """``fn`` on a same-width signed view of unsigned ``x`` (some TF kernels lack uint16...)."""
  if x.dtype in _SIGNED_OF:
    return tf.bitcast(fn(tf.bitcast(x, _SIGNED_OF[x.dtype]), *args, **kwargs), x.dtype)
  return fn(x, *args, **kwargs)


def _is_float(x):
  return x.dtype in _REAL_FLOATING


def _is_complex(x):
  return x.dtype in _COMPLEX_FLOATING


def _is_integral(x):
  return x.dtype in _INTEGRAL


# ---------------------------------------------------------------------------------------------
# Data type functions.

def result_type(*arrays_and_dtypes):
  """NumPy 2's promotion of tf dtypes; Python scalars are weak (see the module docstring)."""
  items, strong = [], False
  for a in arrays_and_dtypes:
    if _is_scalar(a):
      items.append(a)
    else:
      strong = True
      d = a if isinstance(a, (tf.DType, np.dtype, str, type)) else a.dtype
      items.append(_np_dtype(_dtype(d)))
  if not items:
    raise ValueError("result_type needs at least one array or dtype")
  if not strong:  # Only scalars (allowed in where/clip): each takes its kind's default.
    items = [_np_dtype(_kind_default(v)) for v in items]
  return _dtype(np.result_type(*items))


def can_cast(from_, to, /):
  from_ = _dtype(from_ if isinstance(from_, (tf.DType, np.dtype, str, type)) else from_.dtype)
  return _py_bool(np.can_cast(_np_dtype(from_), _np_dtype(_dtype(to))))


_finfo_t = collections.namedtuple("finfo_object", "bits eps max min smallest_normal dtype")
_iinfo_t = collections.namedtuple("iinfo_object", "bits max min dtype")


def _dtype_of(type_):
  return _dtype(type_ if isinstance(type_, (tf.DType, np.dtype, str, type)) else type_.dtype)


def finfo(type, /):  # pylint: disable=redefined-builtin
  d = _dtype_of(type)
  real = _REAL_OF.get(d, d)
  if real not in _REAL_FLOATING:
    raise TypeError(f"finfo needs a floating-point dtype, got {d!r}")
  info = np.finfo(_np_dtype(real))
  return _finfo_t(_py_int(info.bits), _py_float(info.eps), _py_float(info.max),
                  _py_float(info.min), _py_float(info.smallest_normal), real)


def iinfo(type, /):  # pylint: disable=redefined-builtin
  d = _dtype_of(type)
  if d not in _INTEGRAL:
    raise TypeError(f"iinfo needs an integer dtype, got {d!r}")
  info = np.iinfo(_np_dtype(d))
  return _iinfo_t(_py_int(info.bits), _py_int(info.max), _py_int(info.min), d)


def isdtype(dtype, kind):
  dtype = _dtype(dtype)
  if isinstance(kind, tuple):
    return builtins.any(isdtype(dtype, k) for k in kind)
  if isinstance(kind, str):
    if kind not in _KINDS:
      raise ValueError(f"unknown dtype kind {kind!r}; expected one of {sorted(_KINDS)}")
    return dtype in _KINDS[kind]
  return dtype == _dtype(kind)


def astype(x, dtype, /, *, copy=True, device=None):
  x, dtype = _tensor(x), _dtype(dtype)
  with _device(device):
    if x.dtype == dtype:
      return tf.identity(x) if (copy or device is not None) else x
    if dtype == bool:
      return tf.not_equal(x, tf.zeros([], x.dtype))
    if _is_complex(x) and dtype not in _COMPLEX_FLOATING:
      x = tf.math.real(x)
    return tf.cast(x, dtype)


# ---------------------------------------------------------------------------------------------
# Creation functions.

def _contains_tensor(obj):
  if isinstance(obj, (tf.Tensor, tf.Variable)):
    return True
  return isinstance(obj, (list, tuple)) and builtins.any(_contains_tensor(o) for o in obj)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
  dtype = _dtype(dtype)
  with _device(device):
    if isinstance(obj, (tf.Tensor, tf.Variable)):
      x = tf.convert_to_tensor(obj)
      if dtype is not None and x.dtype != dtype:
        if copy is False:
          raise ValueError(f"asarray(copy=False) cannot cast {x.dtype!r} to {dtype!r}")
        return astype(x, dtype)
      return tf.identity(x) if copy else x
    if copy is False:
      raise ValueError("asarray(copy=False): a TensorFlow tensor never shares memory with "
                       f"a {type(obj).__name__}")
    if _contains_tensor(obj):  # A sequence holding tensors: stack them.
      parts = [asarray(o) for o in obj]
      target = dtype or result_type(*parts)
      return tf.stack([_cast(p, target) for p in parts])
    if isinstance(obj, (np.ndarray, np.generic)) or (
        not isinstance(obj, (list, tuple)) and not _is_scalar(obj)):
      a = np.asarray(obj)
      if dtype is not None:
        a = a.astype(_np_dtype(dtype))
      return tf.constant(a)
    if dtype is None:
      inferred = np.asarray(obj).dtype
      dtype = {"b": bool, "i": _DEFAULTS["integral"], "u": uint64,
               "f": _DEFAULTS["real floating"],
               "c": _DEFAULTS["complex floating"]}.get(inferred.kind)
      if dtype is None:
        raise TypeError(f"asarray cannot convert {obj!r} (NumPy infers {inferred})")
    if dtype == bool:
      return tf.constant(np.asarray(obj, dtype=np.bool_))
    return tf.constant(np.asarray(obj, dtype=_np_dtype(dtype)))


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
    return tf.zeros(_shape_arg(shape), _dtype(dtype) or _DEFAULTS["real floating"])


def ones(shape, *, dtype=None, device=None):
  with _device(device):
    return tf.ones(_shape_arg(shape), _dtype(dtype) or _DEFAULTS["real floating"])


def empty(shape, *, dtype=None, device=None):
  return zeros(shape, dtype=dtype, device=device)


def full(shape, fill_value, *, dtype=None, device=None):
  dtype = _fill_dtype(fill_value, dtype)
  with _device(device):
    return tf.fill(_shape_arg(shape), _cast(fill_value, dtype))


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


# ---------------------------------------------------------------------------------------------
# Elementwise functions.

def _nan_like(x):
  return tf.fill(tf.shape(x), tf.constant(math.nan, x.dtype))


def _unary(name, float_fn, *, ints_identity=False, complex_fn=None):
  """An elementwise function of floats (and complex, and ints when they are the identity)."""
  def fn(x, /):
    x = _tensor(x)
    if ints_identity and (_is_integral(x) or x.dtype == bool):
      return x
    if complex_fn is not None and _is_complex(x):
      return complex_fn(x)
    return float_fn(x)
  fn.__name__ = fn.__qualname__ = name
  return fn


def _complex_log(z):
  """log|z| + i arg(z). TF's complex log gives NaN real parts for |z| far from 1 (1e-30,
  1e200); near |z| = 1, log1p keeps the digits log(|z|) would lose (complex64 computes in
  float64 there: float32 products cancel)."""
  if z.dtype == complex64:
    return tf.cast(_complex_log(tf.cast(z, complex128)), complex64)
  a, b = tf.math.real(z), tf.math.imag(z)
  magnitude = tf.math.abs(z)
  big, small = tf.math.maximum(tf.math.abs(a), tf.math.abs(b)), tf.math.minimum(
      tf.math.abs(a), tf.math.abs(b))
  near_one = tf.logical_and(magnitude > 0.5, magnitude < 2.0)
  precise = 0.5 * tf.math.log1p((big - 1.0) * (big + 1.0) + small * small)
  real_part = tf.where(near_one, precise, tf.math.log(magnitude))
  return tf.complex(real_part, tf.math.atan2(b, a))


def _log_base(base):
  def fn(x):
    y = log(x)
    scale = tf.constant(math.log(base), _REAL_OF.get(y.dtype, y.dtype))
    if _is_complex(y):  # Part by part: a complex division makes inf * 0 = NaN.
      return tf.complex(tf.math.real(y) / scale, tf.math.imag(y) / scale)
    return y / scale
  return fn


acos = _unary("acos", tf.math.acos)
acosh = _unary("acosh", tf.math.acosh)
asin = _unary("asin", tf.math.asin)
asinh = _unary("asinh", tf.math.asinh)
atan = _unary("atan", tf.math.atan)
atanh = _unary("atanh", tf.math.atanh)
cos = _unary("cos", tf.math.cos)
cosh = _unary("cosh", tf.math.cosh)
exp = _unary("exp", tf.math.exp)
log = _unary("log", tf.math.log, complex_fn=_complex_log)


def _complex_expm1(z):
  """exp(z) - 1, accurate near 0, with C99's special values (TF's gives NaN at infinities)."""
  a, b = tf.math.real(z), tf.math.imag(z)
  near = tf.logical_and(tf.math.is_finite(a), tf.math.is_finite(b))
  a0, b0 = tf.where(near, a, tf.zeros_like(a)), tf.where(near, b, tf.zeros_like(b))
  half = tf.math.sin(b0 / 2)
  precise = tf.complex(tf.math.expm1(a0) * tf.math.cos(b0) - 2 * half * half,
                       tf.math.exp(a0) * tf.math.sin(b0))
  out = tf.where(near, precise, tf.math.exp(z) - tf.ones([], z.dtype))
  # exp(+inf + i*inf or NaN) has no direction: inf + NaN j; exp(-inf + ...) - 1 is -1 + 0j.
  out = tf.where(tf.logical_and(tf.equal(a, math.inf), tf.logical_not(tf.math.is_finite(b))),
                 tf.complex(a, _nan_like(b)), out)
  out = tf.where(tf.equal(a, -math.inf), tf.complex(-tf.ones_like(a), tf.zeros_like(b)), out)
  real_axis = tf.where(tf.equal(a, 0), tf.zeros_like(a), tf.math.expm1(a))  # +0 at -0 + 0j.
  return tf.where(tf.equal(b, 0), tf.complex(real_axis, b), out)


def _complex_log1p(z):
  """log(1 + z), accurate near 0 (TF's complex log1p gives NaN at infinities)."""
  a, b = tf.math.real(z), tf.math.imag(z)
  small = tf.less(tf.math.maximum(tf.math.abs(a), tf.math.abs(b)), 0.5)
  a0, b0 = tf.where(small, a, tf.zeros_like(a)), tf.where(small, b, tf.zeros_like(b))
  precise = tf.complex(0.5 * tf.math.log1p(a0 * (2 + a0) + b0 * b0), tf.math.atan2(b0, 1 + a0))
  return tf.where(small, precise, _complex_log(z + tf.ones([], z.dtype)))


def _complex_tanh(z):
  """TF's tanh, with tanh(+-inf + i*y) = +-1 + 0j for finite y as the standard says."""
  a, b = tf.math.real(z), tf.math.imag(z)
  limit = tf.logical_and(tf.math.is_inf(a), tf.math.is_finite(b))
  return tf.where(limit, tf.complex(tf.math.sign(a), tf.zeros_like(b) * tf.math.sign(b)),
                  tf.math.tanh(z))


expm1 = _unary("expm1", tf.math.expm1, complex_fn=_complex_expm1)
log1p = _unary("log1p", tf.math.log1p, complex_fn=_complex_log1p)
log2 = _unary("log2", _log_base(2))
log10 = _unary("log10", _log_base(10))
sin = _unary("sin", tf.math.sin)
sinh = _unary("sinh", tf.math.sinh)
sqrt = _unary("sqrt", tf.math.sqrt)
tan = _unary("tan", tf.math.tan)
tanh = _unary("tanh", tf.math.tanh, complex_fn=_complex_tanh)
reciprocal = _unary("reciprocal", tf.math.reciprocal)
ceil = _unary("ceil", tf.math.ceil, ints_identity=True)
floor = _unary("floor", tf.math.floor, ints_identity=True)


def _abs(x):
  return x if x.dtype in _UNSIGNED or x.dtype == bool else tf.math.abs(x)


abs = _unary("abs", _abs)  # pylint: disable=redefined-builtin


def trunc(x, /):
  x = _tensor(x)
  if not _is_float(x):
    return x
  return tf.where(x < 0, tf.math.ceil(x), tf.math.floor(x))


def round(x, /):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  if _is_complex(x):
    return tf.complex(tf.math.round(tf.math.real(x)), tf.math.round(tf.math.imag(x)))
  return tf.math.round(x) if _is_float(x) else x


def negative(x, /):
  x = _tensor(x)
  if x.dtype in _UNSIGNED:
    return tf.zeros_like(x) - x
  return tf.math.negative(x)


def positive(x, /):
  return _tensor(x)


def square(x, /):
  x = _tensor(x)
  return tf.math.multiply(x, x)


def sign(x, /):
  x = _tensor(x)
  if x.dtype in _UNSIGNED or x.dtype == bool:
    return tf.cast(tf.not_equal(x, tf.zeros([], x.dtype)), x.dtype)
  s = tf.math.sign(x)
  if _is_float(x):  # +0 for both zeros (XLA keeps -0).
    s = tf.where(tf.equal(x, 0), tf.zeros_like(x), s)
  return s


def signbit(x, /):
  x = _tensor(x)
  if not _is_float(x):
    return tf.less(x, tf.zeros([], x.dtype)) if x.dtype != bool else tf.zeros_like(x)
  bits = tf.bitcast(x, int32 if x.dtype == float32 else int64)
  return tf.less(bits, tf.zeros([], bits.dtype))


def conj(x, /):
  x = _tensor(x)
  return tf.math.conj(x) if _is_complex(x) else x


def real(x, /):
  x = _tensor(x)
  return tf.math.real(x) if _is_complex(x) else x


def imag(x, /):
  x = _tensor(x)
  return tf.math.imag(x) if _is_complex(x) else tf.zeros_like(x)


def isnan(x, /):
  x = _tensor(x)
  if _is_complex(x):
    return tf.logical_or(tf.math.is_nan(tf.math.real(x)), tf.math.is_nan(tf.math.imag(x)))
  return tf.math.is_nan(x) if _is_float(x) else tf.zeros_like(x, dtype=bool)


def isinf(x, /):
  x = _tensor(x)
  if _is_complex(x):
    return tf.logical_or(tf.math.is_inf(tf.math.real(x)), tf.math.is_inf(tf.math.imag(x)))
  return tf.math.is_inf(x) if _is_float(x) else tf.zeros_like(x, dtype=bool)


def isfinite(x, /):
  x = _tensor(x)
  if _is_complex(x):
    return tf.logical_and(tf.math.is_finite(tf.math.real(x)),
                          tf.math.is_finite(tf.math.imag(x)))
  return tf.math.is_finite(x) if _is_float(x) else tf.ones_like(x, dtype=bool)


def logical_not(x, /):
  return tf.math.logical_not(_cast(x, bool))


def bitwise_invert(x, /):
  x = _tensor(x)
  return tf.math.logical_not(x) if x.dtype == bool else tf.bitwise.invert(x)


def _binary(name, fn):
  def wrapped(x1, x2, /):
    return fn(*_promote(x1, x2))
  wrapped.__name__ = wrapped.__qualname__ = name
  return wrapped


add = _binary("add", tf.math.add)
subtract = _binary("subtract", tf.math.subtract)
multiply = _binary("multiply", tf.math.multiply)
equal = _binary("equal", tf.math.equal)
not_equal = _binary("not_equal", tf.math.not_equal)
greater = _binary("greater", tf.math.greater)
greater_equal = _binary("greater_equal", tf.math.greater_equal)
less = _binary("less", tf.math.less)
less_equal = _binary("less_equal", tf.math.less_equal)
atan2 = _binary("atan2", tf.math.atan2)


def _logical(fn):
  return lambda a, b: fn(_cast(a, bool), _cast(b, bool))


logical_and = _binary("logical_and", _logical(tf.math.logical_and))
logical_or = _binary("logical_or", _logical(tf.math.logical_or))
logical_xor = _binary("logical_xor", _logical(tf.math.logical_xor))


def _bitwise(bool_fn, int_fn):
  return lambda a, b: bool_fn(a, b) if a.dtype == bool else int_fn(a, b)


bitwise_and = _binary("bitwise_and", _bitwise(tf.math.logical_and, tf.bitwise.bitwise_and))
bitwise_or = _binary("bitwise_or", _bitwise(tf.math.logical_or, tf.bitwise.bitwise_or))
bitwise_xor = _binary("bitwise_xor", _bitwise(tf.math.logical_xor, tf.bitwise.bitwise_xor))


def _shift_parts(x1, x2):
  x1, x2 = _promote(x1, x2)
  bits = x1.dtype.size * 8
  too_far = tf.greater_equal(x2, tf.constant(bits, x2.dtype))
  amount = tf.where(too_far, tf.zeros_like(x2), x2)
  return x1, amount, too_far


def bitwise_left_shift(x1, x2, /):
  x1, amount, too_far = _shift_parts(x1, x2)
  return tf.where(too_far, tf.zeros_like(x1), tf.bitwise.left_shift(x1, amount))


def bitwise_right_shift(x1, x2, /):
  x1, amount, too_far = _shift_parts(x1, x2)
  fill = (tf.where(tf.less(x1, 0), -tf.ones_like(x1), tf.zeros_like(x1))
          if x1.dtype in _SIGNED else tf.zeros_like(x1))
  return tf.where(too_far, fill, tf.bitwise.right_shift(x1, amount))


def divide(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  if _is_integral(x1) or x1.dtype == bool:
    x1, x2 = tf.cast(x1, float64), tf.cast(x2, float64)
  return tf.math.truediv(x1, x2)


def _int_division_operands(x1, x2):
  """``x2`` with 0 (and -1 under INT_MIN) replaced by 1, and where x2 was 0."""
  zero = tf.equal(x2, 0)
  bad = zero
  if x1.dtype in _SIGNED:
    bad = tf.logical_or(bad, tf.logical_and(tf.equal(x1, x1.dtype.min), tf.equal(x2, -1)))
  return tf.where(bad, tf.ones_like(x2), x2), zero, bad


def _python_floor_divide(x1, x2):
  """Python's ``//`` for finite floats (from the remainder, as CPython and NumPy do)."""
  mod = tf.truncatemod(x1, x2)
  div = (x1 - mod) / x2
  fix = tf.logical_and(tf.not_equal(mod, 0), tf.not_equal(tf.less(x2, 0), tf.less(mod, 0)))
  div = tf.where(fix, div - 1, div)
  floordiv = tf.math.floor(div)
  floordiv = tf.where(div - floordiv > 0.5, floordiv + 1, floordiv)
  zero = copysign(tf.zeros_like(x1), x1 / x2)
  return tf.where(tf.equal(div, 0), zero, floordiv)


def floor_divide(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  if _is_integral(x1):
    safe, zero, _ = _int_division_operands(x1, x2)
    return tf.where(zero, tf.zeros_like(x1), tf.math.floordiv(x1, safe))
  finite = tf.logical_and(tf.logical_and(tf.math.is_finite(x1), tf.math.is_finite(x2)),
                          tf.not_equal(x2, 0))
  safe2 = tf.where(finite, x2, tf.ones_like(x2))
  return tf.where(finite, _python_floor_divide(tf.where(finite, x1, tf.zeros_like(x1)), safe2),
                  tf.math.floor(x1 / x2))


def remainder(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  if _is_integral(x1):
    safe, _, bad = _int_division_operands(x1, x2)
    return tf.where(bad, tf.zeros_like(x1), tf.math.floormod(x1, safe))
  mod = tf.truncatemod(x1, x2)
  fix = tf.logical_and(tf.not_equal(mod, 0), tf.not_equal(tf.less(x2, 0), tf.less(mod, 0)))
  mod = tf.where(fix, mod + x2, mod)
  return tf.where(tf.equal(mod, 0), copysign(tf.zeros_like(mod), x2), mod)


def pow(x1, x2, /):  # pylint: disable=redefined-builtin
  x1, x2 = _promote(x1, x2)
  if not _is_integral(x1):
    return tf.math.pow(x1, x2)
  dtype = x1.dtype
  negative_exponent = tf.less(x2, 0) if dtype in _SIGNED else None
  if dtype in (uint8, uint16, uint32):  # Powers wrap, so a wider signed type gives the bits.
    wide = int64 if dtype == uint32 else int32
    out = tf.cast(tf.math.pow(tf.cast(x1, wide), tf.cast(x2, wide)), dtype)
  elif dtype == uint64:
    out = tf.bitcast(tf.math.pow(tf.bitcast(x1, int64), tf.bitcast(x2, int64)), uint64)
  else:
    out = tf.math.pow(x1, tf.where(negative_exponent, tf.zeros_like(x2), x2))
  if negative_exponent is None:
    return out
  # x1 ** -n truncated toward zero: 1 for x1 == 1, +-1 for x1 == -1, else 0.
  odd = tf.equal(tf.math.floormod(x2, 2), 1)
  minus_one = tf.where(odd, -tf.ones_like(x1), tf.ones_like(x1))
  small = tf.where(tf.equal(x1, 1), tf.ones_like(x1),
                   tf.where(tf.equal(x1, -1), minus_one, tf.zeros_like(x1)))
  return tf.where(negative_exponent, small, out)


def copysign(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  magnitude = tf.math.abs(x1)
  return tf.where(signbit(x2), -magnitude, magnitude)


def _extremum(fn, pick_first):
  """TF's maximum/minimum for integers; for floats NaN propagates and of equal values (-0 and
  +0) the second wins, as in NumPy (TF's kernels differ between eager and XLA on both)."""
  def apply(a, b):
    if not _is_float(a):
      return fn(a, b)
    out = tf.where(pick_first(a, b), a, b)
    return tf.where(tf.math.is_nan(a), a, tf.where(tf.math.is_nan(b), b, out))
  return apply


maximum = _binary("maximum", _extremum(tf.math.maximum, tf.math.greater))
minimum = _binary("minimum", _extremum(tf.math.minimum, tf.math.less))


def hypot(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  a, b = tf.math.abs(x1), tf.math.abs(x2)
  big, small = tf.math.maximum(a, b), tf.math.minimum(a, b)
  safe = tf.where(tf.equal(big, 0), tf.ones_like(big), big)
  out = big * tf.math.sqrt(1 + tf.math.square(small / safe))
  out = tf.where(tf.equal(big, 0), tf.zeros_like(out), out)
  out = tf.where(tf.logical_or(tf.math.is_nan(a), tf.math.is_nan(b)), _nan_like(out), out)
  infinite = tf.logical_or(tf.math.is_inf(a), tf.math.is_inf(b))
  return tf.where(infinite, tf.fill(tf.shape(out), tf.constant(math.inf, out.dtype)), out)


def logaddexp(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  big = tf.math.maximum(x1, x2)
  gap = tf.where(tf.equal(x1, x2), tf.zeros_like(x1), -tf.math.abs(x1 - x2))
  out = big + tf.math.log1p(tf.math.exp(gap))
  either_nan = tf.logical_or(tf.math.is_nan(x1), tf.math.is_nan(x2))
  return tf.where(either_nan, _nan_like(out), out)


def nextafter(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  x1, x2 = broadcast_arrays(x1, x2)
  return tf.math.nextafter(x1, x2)


def clip(x, /, min=None, max=None):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  out = x
  if min is not None:
    lo = _cast(min, x.dtype)
    out = tf.where(tf.math.less(out, lo), lo, out)
  if max is not None:
    hi = _cast(max, x.dtype)
    out = tf.where(tf.math.greater(out, hi), hi, out)
  if _is_float(x):
    for bound in (min, max):
      if bound is not None and not _is_scalar(bound):
        out = tf.where(tf.math.is_nan(_cast(bound, x.dtype)), _cast(bound, x.dtype), out)
    out = tf.where(tf.math.is_nan(x), x, out)
  return out


# ---------------------------------------------------------------------------------------------
# Indexing functions.

def _wrap_indices(indices, n):
  indices = _tensor(indices)
  return tf.where(tf.less(indices, 0), indices + tf.cast(n, indices.dtype), indices)


def take(x, indices, /, *, axis=None):
  x = _tensor(x)
  if axis is None:
    if x.shape.rank != 1:
      raise ValueError("take: axis is required for arrays with more than one dimension")
    axis = 0
  axis = _norm_axis(axis, x.shape.rank)[0]
  return _via_signed(lambda v: tf.gather(v, _wrap_indices(indices, _shape(x)[axis]),
                                         axis=axis), x)


def _last_axis_gather(x, indices):
  """x[..., indices[..., j]] with x and indices of equal batch shapes (along the last axis)."""
  return tf.gather(x, indices, axis=-1, batch_dims=x.shape.rank - 1)


def _move_to_last(x, axis):
  perm = [a for a in range(x.shape.rank) if a != axis] + [axis]
  return tf.transpose(x, perm), perm


def _from_last(x, perm):
  return tf.transpose(x, np.argsort(perm).tolist())


def take_along_axis(x, indices, /, *, axis=-1):
  x, indices = _tensor(x), _tensor(indices)
  if indices.shape.rank != x.shape.rank:
    raise ValueError("take_along_axis: x and indices must have the same rank")
  axis = _norm_axis(axis, x.shape.rank)[0]
  xs, js = _shape(x), _shape(indices)
  batch = tf.broadcast_static_shape(
      tf.TensorShape([1 if a == axis else s for a, s in enumerate(xs)]),
      tf.TensorShape([1 if a == axis else s for a, s in enumerate(js)])).as_list()
  x = tf.broadcast_to(x, [xs[a] if a == axis else s for a, s in enumerate(batch)])
  indices = tf.broadcast_to(_wrap_indices(indices, xs[axis]),
                            [js[a] if a == axis else s for a, s in enumerate(batch)])
  xt, perm = _move_to_last(x, axis)
  jt, _ = _move_to_last(indices, axis)
  return _from_last(_last_axis_gather(xt, jt), perm)


# ---------------------------------------------------------------------------------------------
# Manipulation functions.

def _broadcast_shape(*shapes):
  out = tf.TensorShape([])
  for s in shapes:
    out = tf.broadcast_static_shape(out, tf.TensorShape(s))
  return out.as_list()


def broadcast_arrays(*arrays):
  arrays = [_tensor(a) for a in arrays]
  shapes = [_shape(a) for a in arrays]
  if builtins.all(isinstance(d, _py_int) for s in shapes for d in s):
    shape = _broadcast_shape(*shapes)
  else:
    shape = tf.shape(arrays[0])
    for a in arrays[1:]:
      shape = tf.broadcast_dynamic_shape(shape, tf.shape(a))
  return [tf.broadcast_to(a, shape) for a in arrays]


def broadcast_to(x, /, shape):
  x = _tensor(x)
  shape = _shape_arg(shape)
  _broadcast_shape(_shape(x), shape)  # Raises a ValueError on incompatible shapes.
  if len(shape) < x.shape.rank or builtins.any(
      s != 1 and s != t for s, t in zip(_shape(x)[::-1], shape[::-1])):
    raise ValueError(f"cannot broadcast shape {_shape(x)} to {shape}")
  return tf.broadcast_to(x, shape)


def concat(arrays, /, *, axis=0):
  arrays = _promote(*arrays)
  if axis is None:
    return tf.concat([tf.reshape(a, [-1]) for a in arrays], 0)
  axis = _norm_axis(axis, arrays[0].shape.rank)[0]
  return tf.concat(arrays, axis)


def expand_dims(x, /, axis=0):
  x = _tensor(x)
  axis = _index(axis, "axis")
  if not -x.shape.rank - 1 <= axis <= x.shape.rank:
    raise IndexError(f"expand_dims: axis {axis} is out of range for {x.shape.rank + 1} dims")
  return tf.expand_dims(x, axis)


def flip(x, /, *, axis=None):
  x = _tensor(x)
  axes = _reduce_axes(x, axis)
  return tf.reverse(x, axes) if axes else x


def moveaxis(x, source, destination, /):
  x = _tensor(x)
  src = _norm_axis(source, x.shape.rank)
  dst = _norm_axis(destination, x.shape.rank)
  if len(src) != len(dst):
    raise ValueError("moveaxis: source and destination need the same number of axes")
  order = [a for a in range(x.shape.rank) if a not in src]
  for d, s in sorted(zip(dst, src)):
    order.insert(d, s)
  return tf.transpose(x, order)


def permute_dims(x, /, axes):
  x = _tensor(x)
  axes = _norm_axis(tuple(axes), x.shape.rank)
  if len(axes) != x.shape.rank:
    raise ValueError(f"permute_dims: axes {axes} do not match {x.shape.rank} dimensions")
  return tf.transpose(x, axes)


def repeat(x, repeats, /, *, axis=None):
  x = _tensor(x)
  if axis is None:
    x, axis = tf.reshape(x, [-1]), 0
  axis = _norm_axis(axis, x.shape.rank)[0]
  if not _is_scalar(repeats):
    repeats = _cast(repeats, int64)
  return _via_signed(lambda v: tf.repeat(v, repeats, axis=axis), x)


def reshape(x, /, shape, *, copy=None):
  x = _tensor(x)
  shape = _shape_arg(shape)
  return tf.identity(tf.reshape(x, shape)) if copy else tf.reshape(x, shape)


def roll(x, /, shift, *, axis=None):
  x = _tensor(x)
  if axis is None:
    flat = tf.reshape(x, [-1])
    total = builtins.sum(shift) if isinstance(shift, (tuple, list)) else shift
    return tf.reshape(tf.roll(flat, total, 0), _shape(x))
  axes = _norm_axis(axis, x.shape.rank)
  shifts = list(shift) if isinstance(shift, (tuple, list)) else [shift] * len(axes)
  if len(shifts) != len(axes):
    raise ValueError("roll: shift and axis must have the same length")
  return tf.roll(x, shifts, axes) if axes else x


def squeeze(x, /, axis):
  x = _tensor(x)
  axes = _norm_axis(axis, x.shape.rank)
  for a in axes:
    if x.shape[a] is not None and x.shape[a] != 1:
      raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
  return tf.squeeze(x, axes) if axes else x


def stack(arrays, /, *, axis=0):
  arrays = _promote(*arrays)
  axis = _index(axis, "axis")
  rank = arrays[0].shape.rank + 1
  if not -rank <= axis < rank:
    raise IndexError(f"stack: axis {axis} is out of range for {rank} dimensions")
  return tf.stack(arrays, axis)


def tile(x, repetitions, /):
  x = _tensor(x)
  reps = [_index(r, "repetitions") for r in repetitions]
  rank = x.shape.rank
  if len(reps) > rank:
    x = tf.reshape(x, [1] * (len(reps) - rank) + _shape(x))
  reps = [1] * (x.shape.rank - len(reps)) + reps
  return _via_signed(tf.tile, x, reps)


def unstack(x, /, *, axis=0):
  x = _tensor(x)
  axis = _norm_axis(axis, x.shape.rank)[0]
  return tuple(tf.unstack(x, axis=axis))


# ---------------------------------------------------------------------------------------------
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
  if d in _REAL_FLOATING:
    canonical = tf.where(tf.math.is_nan(x), _nan_like(x),
                         tf.where(tf.equal(x, 0), tf.zeros_like(x), x))
    itype = int32 if d == float32 else int64
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
    key = tf.where(tf.math.is_nan(x), tf.fill(tf.shape(key), key.dtype.max if largest
                                              else key.dtype.min), key)
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
  return tf.where(_cast(condition, bool), x1, x2)


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



# ---------------------------------------------------------------------------------------------
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
  return tf.reduce_sum(x, _reduce_axes(x, axis), keepdims=keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
  x = _tensor(x)
  x = astype(x, _accumulation_dtype(x, dtype), copy=False)
  return tf.reduce_prod(x, _reduce_axes(x, axis), keepdims=keepdims)


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
  return tf.reduce_mean(x, _reduce_axes(x, axis), keepdims=keepdims)


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
  return fn(x, axis=axis)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  return _cumulative(tf.math.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  return _cumulative(tf.math.cumprod, 1, x, axis, dtype, include_initial)


def _truth(x):
  return x if x.dtype == bool else tf.not_equal(x, tf.zeros([], x.dtype))


def all(x, /, *, axis=None, keepdims=False):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  return tf.reduce_all(_truth(x), _reduce_axes(x, axis), keepdims=keepdims)


def any(x, /, *, axis=None, keepdims=False):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  return tf.reduce_any(_truth(x), _reduce_axes(x, axis), keepdims=keepdims)


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


# ---------------------------------------------------------------------------------------------
# Linear algebra (top level and the `linalg` extension).

def _matmul_dtype_fix(fn, a, b):
  """``fn(a, b)`` for dtypes TF's matmul kernels lack: wrap-around in a wider integer."""
  d = a.dtype
  if d in (int8, int16, uint8, uint16):
    return tf.cast(fn(tf.cast(a, int32), tf.cast(b, int32)), d)
  if d == uint32:
    return tf.cast(fn(tf.cast(a, int64), tf.cast(b, int64)), d)
  if d == uint64:
    return tf.bitcast(fn(tf.bitcast(a, int64), tf.bitcast(b, int64)), d)
  if d == bool:
    return tf.not_equal(fn(tf.cast(a, int32), tf.cast(b, int32)), 0)
  return fn(a, b)


def matmul(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  if x1.shape.rank == 0 or x2.shape.rank == 0:
    raise ValueError("matmul does not take zero-dimensional arrays")
  vec1, vec2 = x1.shape.rank == 1, x2.shape.rank == 1
  a = x1[None, :] if vec1 else x1
  b = x2[:, None] if vec2 else x2
  if a.shape[-1] is not None and b.shape[-2] is not None and a.shape[-1] != b.shape[-2]:
    raise ValueError(f"matmul: shapes {x1.shape} and {x2.shape} do not align")
  out = _matmul_dtype_fix(tf.linalg.matmul, a, b)
  if vec1:
    out = tf.squeeze(out, -2)
  if vec2:
    out = tf.squeeze(out, -1)
  return out


def matrix_transpose(x, /):
  x = _tensor(x)
  if x.shape.rank < 2:
    raise ValueError("matrix_transpose needs at least two dimensions")
  perm = list(range(x.shape.rank))
  perm[-2], perm[-1] = perm[-1], perm[-2]
  return tf.transpose(x, perm)


def tensordot(x1, x2, /, *, axes=2):
  x1, x2 = _promote(x1, x2)
  if isinstance(axes, (tuple, list)):
    axes = [_norm_axis(tuple(axes[0]), x1.shape.rank), _norm_axis(tuple(axes[1]), x2.shape.rank)]
  else:
    axes = _index(axes, "axes")
  return _matmul_dtype_fix(lambda a, b: tf.tensordot(a, b, axes), x1, x2)


def vecdot(x1, x2, /, *, axis=-1):
  x1, x2 = _promote(x1, x2)
  n1, n2 = x1.shape[axis], x2.shape[axis]  # The vectors' axis does not broadcast.
  if n1 is not None and n2 is not None and n1 != n2:
    raise ValueError(f"vecdot: axis {axis} has sizes {n1} and {n2}")
  x1, x2 = broadcast_arrays(x1, x2)
  axis = _norm_axis(axis, x1.shape.rank)[0]
  return tf.reduce_sum(conj(x1) * x2, axis)


def _diagonal(x, offset=0):
  x = _tensor(x)
  m, n = _shape(x)[-2:]
  r0, c0 = _py_max(0, -offset), _py_max(0, offset)
  length = _py_max(0, _py_min(m - r0, n - c0))
  flat = tf.reshape(x, _shape(x)[:-2] + [m * n])
  positions = tf.constant([(r0 + j) * n + c0 + j for j in range(length)], int64)
  return tf.gather(flat, positions, axis=-1)


def _trace(x, /, *, offset=0, dtype=None):
  return sum(_diagonal(x, offset), axis=-1, dtype=dtype)


def _adjoint(x):
  return conj(matrix_transpose(x))


def _cholesky(x, /, *, upper=False):
  lower = tf.linalg.cholesky(_tensor(x))
  return _adjoint(lower) if upper else lower


def _cross(x1, x2, /, *, axis=-1):
  x1, x2 = _promote(x1, x2)
  x1, x2 = broadcast_arrays(x1, x2)
  axis = _norm_axis(axis, x1.shape.rank)[0]
  if _shape(x1)[axis] != 3:
    raise ValueError(f"cross: axis {axis} must have size 3, got {_shape(x1)[axis]}")
  a = tf.unstack(x1, axis=axis)
  b = tf.unstack(x2, axis=axis)
  return tf.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                   a[0] * b[1] - a[1] * b[0]], axis=axis)


def _lu_pivots(a):
  """Gaussian elimination with partial pivoting of (..., n, n): (permutation sign, pivots)."""
  n = _shape(a)[-1]
  rows = tf.range(n)
  magnitude_dtype = _REAL_OF.get(a.dtype, a.dtype)

  # Rows and columns are picked with one-hot masks, not gathers at the loop index: XLA can
  # then differentiate the loop twice (a gather's gradient transposes by a traced axis).
  def pick(x, mask, axis):
    return tf.reduce_sum(tf.where(mask, x, tf.zeros([], x.dtype)), axis)

  def body(k, a, sign, pivots):
    is_k = tf.equal(rows, k)
    column = pick(a, is_k, -1)
    magnitude = tf.where(rows >= k, tf.math.abs(column), -tf.ones([], magnitude_dtype))
    p = tf.math.argmax(magnitude, axis=-1, output_type=int32)
    is_p = tf.equal(rows, p[..., None])
    row_k = pick(a, is_k[:, None], -2)
    row_p = pick(a, is_p[..., :, None], -2)
    a = tf.where(is_k[:, None], row_p[..., None, :],
                 tf.where(is_p[..., :, None], row_k[..., None, :], a))
    sign = tf.where(tf.equal(p, k), sign, -sign)
    pivot = pick(row_p, is_k, -1)
    pivots = tf.where(is_k, pivot[..., None], pivots)
    safe = tf.where(tf.equal(pivot, 0), tf.ones_like(pivot), pivot)
    factor = tf.where(rows > k, pick(a, is_k, -1) / safe[..., None], tf.zeros_like(column))
    a = a - factor[..., :, None] * row_p[..., None, :]
    return k + 1, a, sign, pivots

  sign = tf.ones(_shape(a)[:-2], a.dtype)
  pivots = tf.zeros(_shape(a)[:-1], a.dtype)
  # A bound on the loop lets XLA differentiate it (fixed-size stacks of the iterations).
  _, _, sign, pivots = tf.while_loop(lambda k, *_: k < n, body,
                                     (tf.constant(0), a, sign, pivots), maximum_iterations=n)
  return sign, pivots


def _det(x, /):
  x = _tensor(x)
  sign, pivots = _lu_pivots(x)
  return sign * tf.reduce_prod(pivots, -1)


_SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])


def _slogdet(x, /):
  x = _tensor(x)
  sign, pivots = _lu_pivots(x)
  magnitude = tf.math.abs(pivots)
  logabsdet = tf.reduce_sum(tf.math.log(magnitude), -1)
  unit = pivots / tf.cast(tf.where(tf.equal(magnitude, 0), tf.ones_like(magnitude), magnitude),
                          x.dtype)
  sign = sign * tf.reduce_prod(unit, -1)
  singular = tf.reduce_any(tf.equal(magnitude, 0), -1)
  return _SlogdetResult(tf.where(singular, tf.zeros_like(sign), sign), logabsdet)


_EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


def _eigh(x, /):
  x = _tensor(x)
  values, vectors = tf.linalg.eigh(x)
  if _is_complex(x):  # Eigenvalues from the vectors: TF's XLA complex eigenvalues are wrong.
    values = tf.math.real(tf.reduce_sum(tf.math.conj(vectors) * tf.linalg.matmul(x, vectors),
                                        -2))
  return _EighResult(values, vectors)


def _eigvalsh(x, /):
  x = _tensor(x)
  return _eigh(x).eigenvalues if _is_complex(x) else tf.linalg.eigvalsh(x)


def _inv(x, /):
  return tf.linalg.inv(_tensor(x))


def _outer(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  if x1.shape.rank != 1 or x2.shape.rank != 1:
    raise ValueError("outer needs one-dimensional arrays")
  return multiply(x1[:, None], x2[None, :])


_QRResult = collections.namedtuple("QRResult", ["Q", "R"])


def _qr(x, /, *, mode="reduced"):
  if mode not in ("reduced", "complete"):
    raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
  q, r = tf.linalg.qr(_tensor(x), full_matrices=mode == "complete")
  return _QRResult(q, r)


_SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])


def _svd(x, /, *, full_matrices=True):
  s, u, v = tf.linalg.svd(_tensor(x), full_matrices=full_matrices)
  return _SVDResult(u, s, _adjoint(v))


def _svdvals(x, /):
  return tf.linalg.svd(_tensor(x), compute_uv=False)


def _solve(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  vector = x2.shape.rank == 1
  b = x2[:, None] if vector else x2
  batch = _broadcast_shape(_shape(x1)[:-2], _shape(b)[:-2])
  a = tf.broadcast_to(x1, batch + _shape(x1)[-2:])
  b = tf.broadcast_to(b, batch + _shape(b)[-2:])
  out = tf.linalg.solve(a, b)
  return out[..., 0] if vector else out


def _default_rtol(x):
  m, n = _shape(x)[-2:]
  return _py_max(m, n) * finfo(x.dtype).eps


def _matrix_rank(x, /, *, rtol=None):
  x = _tensor(x)
  s = _svdvals(x)
  rtol = _default_rtol(x) if rtol is None else rtol
  rtol = _cast(rtol, s.dtype)
  tol = tf.reduce_max(s, -1, keepdims=True) * (rtol[..., None] if rtol.shape.rank else rtol)
  return count_nonzero(tf.greater(s, tol), axis=-1)


def _pinv(x, /, *, rtol=None):
  x = _tensor(x)
  s, u, v = tf.linalg.svd(x, full_matrices=False)
  rtol = _default_rtol(x) if rtol is None else rtol
  rtol = _cast(rtol, s.dtype)
  cutoff = tf.reduce_max(s, -1, keepdims=True) * (rtol[..., None] if rtol.shape.rank else rtol)
  keep = tf.greater(s, cutoff)
  s_inv = tf.where(keep, 1 / tf.where(keep, s, tf.ones_like(s)), tf.zeros_like(s))
  return tf.linalg.matmul(v * tf.cast(s_inv, x.dtype)[..., None, :], _adjoint(u))


def _matrix_power(x, n, /):
  x = _tensor(x)
  n = _index(n, "n")
  if n < 0:
    x, n = _inv(x), -n
  result = None
  while n:
    if n & 1:
      result = x if result is None else matmul(result, x)
    n >>= 1
    if n:
      x = matmul(x, x)
  if result is None:
    shape = _shape(x)
    return tf.broadcast_to(eye(shape[-1], dtype=x.dtype), shape)
  return result


def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  axes = _reduce_axes(x, axis)
  a = tf.math.abs(x)
  if ord == math.inf:
    out = max(a, axis=tuple(axes), keepdims=keepdims)
  elif ord == -math.inf:
    out = min(a, axis=tuple(axes), keepdims=keepdims)
  elif ord == 0:
    out = tf.cast(count_nonzero(a, axis=tuple(axes), keepdims=keepdims), a.dtype)
  elif ord == 1:
    out = tf.reduce_sum(a, axes, keepdims=keepdims)
  elif ord == 2:
    out = tf.math.sqrt(tf.reduce_sum(a * a, axes, keepdims=keepdims))
  else:
    p = tf.constant(ord, a.dtype)
    out = tf.math.pow(tf.reduce_sum(tf.math.pow(a, p), axes, keepdims=keepdims), 1 / p)
  return out


def _matrix_norm(x, /, *, keepdims=False, ord="fro"):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  if ord == "fro":
    a = tf.math.abs(x)
    out = tf.math.sqrt(tf.reduce_sum(a * a, [-2, -1]))
  elif ord in ("nuc", 2, -2):
    s = _svdvals(x)
    out = {"nuc": lambda: tf.reduce_sum(s, -1), 2: lambda: max(s, axis=-1),
           -2: lambda: min(s, axis=-1)}[ord]()
  elif ord in (1, -1, math.inf, -math.inf):
    sums = tf.reduce_sum(tf.math.abs(x), -2 if ord in (1, -1) else -1)
    out = max(sums, axis=-1) if ord in (1, math.inf) else min(sums, axis=-1)
  else:
    raise ValueError(f"matrix_norm: unsupported ord {ord!r}")
  return out[..., None, None] if keepdims else out


linalg = types.SimpleNamespace(
    cholesky=_cholesky, cross=_cross, det=_det, diagonal=_diagonal, eigh=_eigh,
    eigvalsh=_eigvalsh, inv=_inv, matmul=matmul, matrix_norm=_matrix_norm,
    matrix_power=_matrix_power, matrix_rank=_matrix_rank, matrix_transpose=matrix_transpose,
    outer=_outer, pinv=_pinv, qr=_qr, slogdet=_slogdet, solve=_solve, svd=_svd,
    svdvals=_svdvals, tensordot=tensordot, trace=_trace, vecdot=vecdot,
    vector_norm=_vector_norm)
for _name, _fn in vars(linalg).items():
  _fn.__name__ = _fn.__qualname__ = _name
del _name, _fn


# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# Inspection.

class _Info:
  """What ``__array_namespace_info__()`` returns."""

  def capabilities(self):
    # Data-dependent shapes (unique_*, nonzero) work eagerly and in graphs, not under XLA.
    return {"boolean indexing": False, "data-dependent shapes": True, "max dimensions": 8}

  def default_device(self):
    devices = self.devices()
    gpus = [d for d in devices if "/device:GPU:" in d]
    return (gpus or devices)[0]

  def devices(self):
    return ["/job:localhost/replica:0/task:0" + d.name
            for d in tf.config.list_logical_devices() if d.device_type in ("CPU", "GPU")]

  def default_dtypes(self, *, device=None):
    del device
    return dict(_DEFAULTS)

  def dtypes(self, *, device=None, kind=None):
    del device
    return {d.name: d for d in _DTYPES if kind is None or isdtype(d, kind)}


def __array_namespace_info__():
  return _Info()


# The standard's names: its functions, dtypes, constants and the linalg and fft extensions.
__all__ = sorted(name for name, value in globals().items()
                 if not name.startswith("_") and not isinstance(value, types.ModuleType))
