"""Elementwise functions (complex special cases: ``_complex``)."""

import math

import tensorflow as tf
from tensorflow.python.ops import control_flow_util  # pylint: disable=g-direct-tensorflow-import

from crossgrad.backends.tensorflow.namespace import _complex, _raw
from crossgrad.backends.tensorflow.namespace._dtypes import (
    _REAL_OF, _SIGNED, _UNSIGNED, _cast, _is_complex, _is_float, _is_integral, _is_scalar,
    _promote, _tensor, bool, complex128, complex64, float32, float64, int32, int64, uint16,
    uint32, uint64, uint8)
from crossgrad.backends.tensorflow.namespace._manipulation import broadcast_arrays


# Elementwise functions.

def _nan_like(x):
  return tf.fill(tf.shape(x), tf.constant(math.nan, x.dtype))


def _unary(name, float_fn, *, ints_identity=False, complex_fn=None):
  """An elementwise function of floats (and complex, and ints when they are the identity)."""
  def fn(x, /):
    x = _tensor(x)
    if ints_identity and (_is_integral(x) or x.dtype.is_bool):
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


def _complex_expm1(z):
  """exp(z) - 1 for finite z, accurate near 0 (special values: `_complex.expm1_rules`)."""
  a, b = tf.math.real(z), tf.math.imag(z)
  half = tf.math.sin(b / 2)
  return tf.complex(tf.math.expm1(a) * tf.math.cos(b) - 2 * half * half,
                    tf.math.exp(a) * tf.math.sin(b))


def _complex_log1p(z):
  """log(1 + z) for finite z, accurate near 0 (special values: `_complex.log1p_rules`)."""
  a, b = tf.math.real(z), tf.math.imag(z)
  small = tf.less(tf.math.maximum(tf.math.abs(a), tf.math.abs(b)), 0.5)
  a0, b0 = tf.where(small, a, tf.zeros_like(a)), tf.where(small, b, tf.zeros_like(b))
  precise = tf.complex(0.5 * tf.math.log1p(a0 * (2 + a0) + b0 * b0), tf.math.atan2(b0, 1 + a0))
  return tf.where(small, precise, _complex_log(z + tf.ones([], z.dtype)))


acos = _unary("acos", tf.math.acos,
              complex_fn=_complex.special(tf.math.acos, _complex.acos_rules))
acosh = _unary("acosh", tf.math.acosh,
               complex_fn=_complex.special(tf.math.acosh, _complex.acosh_rules))
asin = _unary("asin", tf.math.asin)
asinh = _unary("asinh", tf.math.asinh,
               complex_fn=_complex.special(tf.math.asinh, _complex.asinh_rules, "odd"))
atan = _unary("atan", tf.math.atan)
atanh = _unary("atanh", tf.math.atanh,
               complex_fn=_complex.special(tf.math.atanh, _complex.atanh_rules, "odd"))
cos = _unary("cos", tf.math.cos)
cosh = _unary("cosh", tf.math.cosh,
              complex_fn=_complex.special(tf.math.cosh, _complex.cosh_rules, "even"))
exp = _unary("exp", tf.math.exp, complex_fn=_complex.special(tf.math.exp, _complex.exp_rules))
log = _unary("log", tf.math.log, complex_fn=_complex.special(_complex_log, _complex.log_rules))
expm1 = _unary("expm1", tf.math.expm1,
               complex_fn=_complex.special(_complex_expm1, _complex.expm1_rules))
log1p = _unary("log1p", tf.math.log1p,
               complex_fn=_complex.special(_complex_log1p, _complex.log1p_rules))
log2 = _unary("log2", _log_base(2))
log10 = _unary("log10", _log_base(10))
sin = _unary("sin", tf.math.sin)
sinh = _unary("sinh", tf.math.sinh,
              complex_fn=_complex.special(tf.math.sinh, _complex.sinh_rules, "odd"))
sqrt = _unary("sqrt", tf.math.sqrt,
              complex_fn=_complex.special(tf.math.sqrt, _complex.sqrt_rules))
tan = _unary("tan", tf.math.tan)
tanh = _unary("tanh", tf.math.tanh,
              complex_fn=_complex.special(tf.math.tanh, _complex.tanh_rules, "odd"))
reciprocal = _unary("reciprocal", tf.math.reciprocal)
ceil = _unary("ceil", tf.math.ceil, ints_identity=True)
floor = _unary("floor", tf.math.floor, ints_identity=True)


def _abs(x):
  return x if x.dtype in _UNSIGNED or x.dtype.is_bool else _raw.real_abs(x)


def _complex_abs(z):
  """|z|; under XLA (whose expansion gives ``|1 + NaN j| = sqrt(2)``, ``|NaN + inf j| = NaN``)
  with the standard's cases where a part is not finite: +inf if a part is infinite, else NaN
  if a part is NaN (TF's kernel gives those eagerly)."""
  magnitude = tf.math.abs(z)
  if not _in_xla():
    return magnitude
  a, b = tf.math.real(z), tf.math.imag(z)
  nan = tf.logical_or(tf.math.is_nan(a), tf.math.is_nan(b))
  magnitude = tf.where(nan, _nan_like(magnitude), magnitude)
  infinite = tf.logical_or(tf.math.is_inf(a), tf.math.is_inf(b))
  return tf.where(infinite, tf.fill(tf.shape(magnitude), tf.constant(math.inf, a.dtype)),
                  magnitude)


abs = _unary("abs", _abs, complex_fn=_complex_abs)  # pylint: disable=redefined-builtin


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
  if x.dtype in _UNSIGNED or x.dtype.is_bool:
    return tf.cast(tf.not_equal(x, tf.zeros([], x.dtype)), x.dtype)
  if _is_complex(x):
    s = tf.math.sign(x)
    if not _in_xla():
      return s
    # XLA's gives sign(0 + NaN j) = 0: the standard's NaN.
    a, b = tf.math.real(x), tf.math.imag(x)
    nan = tf.logical_or(tf.math.is_nan(a), tf.math.is_nan(b))
    nan_part = _nan_like(a)
    return tf.where(nan, tf.complex(nan_part, nan_part), s)
  # TF's kernels give the standard's answer alone (NaN for NaN, +0 for both zeros); XLA's
  # Sign keeps -0, so under XLA (where the select fuses away) zeros are made +0.
  s = _raw.real_sign(x)
  if _is_float(x) and _in_xla():
    s = tf.where(tf.equal(x, 0), tf.zeros_like(x), s)
  return s


def _in_xla() -> bool:
  """Tracing for XLA (``tf.function(jit_compile=True)``, also nested): TensorFlow's own
  gradients ask the same (``array_grad``, ``cond_v2``)."""
  return not tf.executing_eagerly() and control_flow_util.GraphOrParentsInXlaContext(
      tf.compat.v1.get_default_graph())


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
multiply = _binary("multiply", _raw.multiply)
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
  # Piecewise constant: its derivative is zero, as TF's own FloorDiv gradient says. From
  # constants, so neither a tape nor a forward accumulator differentiates the TruncateMod
  # inside, which TF has no gradient for (forward mode through it would raise).
  x1, x2 = tf.stop_gradient(x1), tf.stop_gradient(x2)
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
  mod = tf.math.floormod(x1, x2)  # Python's %, and differentiable (TruncateMod is not).
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
