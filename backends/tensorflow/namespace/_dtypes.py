"""Data types, type promotion, conversion to tensors (``asarray``) and the helpers every
module shares (Python scalars, axes, devices)."""

import builtins
import collections
import contextlib
import math
import operator
import struct

import ml_dtypes  # NumPy's bfloat16, installed with TensorFlow.
import numpy as np
import tensorflow as tf

from crossgrad.backends.common import base
from crossgrad.backends.tensorflow.namespace import _raw


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



class _DTypes(tuple):
  """A tuple of dtypes whose ``in`` is one hash lookup for a ``tf.DType``: a tuple's
  compares with each member in turn, and ``DType.__eq__`` is Python code (about a
  microsecond each, several times in every eager op call)."""

  def __new__(cls, dtypes):
    self = super().__new__(cls, dtypes)
    self.members = frozenset(self)
    return self

  def __contains__(self, d):
    if type(d) is tf.DType:
      return d in self.members
    return tuple.__contains__(self, d)  # Names and NumPy dtypes: DType.__eq__ converts.

  def __add__(self, other):
    return _DTypes(tuple(self) + tuple(other))


_SIGNED = _DTypes((int8, int16, int32, int64))
_UNSIGNED = _DTypes((uint8, uint16, uint32, uint64))
_INTEGRAL = _SIGNED + _UNSIGNED
_REAL_FLOATING = _DTypes((float32, float64))
_FLOATING = _REAL_FLOATING + (tf.float16, tf.bfloat16)  # Beyond the standard too.
_COMPLEX_FLOATING = _DTypes((complex64, complex128))
_DTYPES = _DTypes((bool,)) + _INTEGRAL + _REAL_FLOATING + _COMPLEX_FLOATING
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
  if d not in _DTYPES and d not in _FLOATING:  # float16, bfloat16: beyond it, allowed.
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


_KEPT_LIMIT = 1024  # Eager tensors a cache below keeps (then it starts afresh).
_EAGER_SCALARS: dict[tuple, tf.Tensor] = {}  # Kept eager scalars, by type, value, dtype.


def _const(value, dtype):
  """A Python scalar as a tensor of ``dtype`` (NumPy's rules: out-of-range ints raise);
  eagerly one kept tensor per scalar (tensors are immutable), not a conversion per call."""
  if not tf.executing_eagerly():
    return _new_const(value, dtype)
  key = (type(value), repr(value), dtype)  # The repr tells -0.0 from 0.0...
  if value != value:  # ...but not -NaN from NaN: the bits do (copysign reads the sign).
    key += (struct.pack("<dd", value.real, value.imag),)
  return base.interned(_EAGER_SCALARS, key, lambda _: _new_const(value, dtype), _KEPT_LIMIT)


def _new_const(value, dtype):
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
  return x if x.dtype == dtype else _raw.cast(x, dtype)


def _promote(*args):
  """The arguments as tensors of their common dtype (Python scalars are weak)."""
  first = args[0]
  if isinstance(first, tf.Tensor) and first.dtype.is_floating:  # The common case, at once:
    dtype = first.dtype  # floating tensors of one dtype, Python floats and ints.
    if all(type(a) in (_py_float, _py_int) or isinstance(a, tf.Tensor) and a.dtype == dtype
           for a in args[1:]):
      return [a if isinstance(a, tf.Tensor) else _const(a, dtype) for a in args]
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


_HOST_INTS: dict[tuple[int, ...], tf.Tensor] = {}
_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1


def _host_ints(values):
  """Ints an op reads from host memory (axes, a permutation, a shape): eagerly one kept int32
  tensor per tuple, since given a list TF's eager fast path refuses it and converts it on
  every call (for a small transpose or reshape, costlier than the op); in a graph, or past
  int32's range, the list, which becomes a constant once."""
  if not tf.executing_eagerly():
    return values
  return base.interned(_HOST_INTS, tuple(_py_int(v) for v in values), _new_host_ints,
                       _KEPT_LIMIT)


def _new_host_ints(key: tuple[int, ...]) -> tf.Tensor | list[int]:
  """What `_host_ints` keeps for ``key``: the int32 tensor, or past int32's range the list
  (which TensorFlow converts to int64; no caller changes it)."""
  if any(not _INT32_MIN <= v <= _INT32_MAX for v in key):
    return list(key)
  with tf.device("/device:CPU:0"):
    return tf.constant(key, tf.int32)


def _reduction_axes(x, axis):
  """`_reduce_axes` as tf.reduce_* takes them fastest (`_host_ints`)."""
  return _host_ints(_reduce_axes(x, axis))


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
  """Real floating, float16 and bfloat16 (beyond the standard) included: rounding, NaN
  tests and NaN propagation apply to them too."""
  return x.dtype in _FLOATING


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
  if real not in _FLOATING:
    raise TypeError(f"finfo needs a floating-point dtype, got {d!r}")
  info = (ml_dtypes.finfo if real == tf.bfloat16 else np.finfo)(_np_dtype(real))
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
    return _cast(x, dtype)


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
