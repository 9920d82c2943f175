"""Complex elementwise functions with the standard's special cases, the same eagerly and in XLA.

TensorFlow's XLA bridge expands complex ``exp``, ``cosh``, ``sqrt``, ``acos``, ... into real
operations that drop NaNs and signs of zero (``sqrt(0 + NaN j)`` gives ``0j``, ``exp(1.5 - 0j)``
``+0j``), where the eager kernels follow C99. Here each function computes TensorFlow's value
only for finite inputs in the closed first quadrant (real and imaginary parts ``>= +0``;
the whole upper half-plane for functions without odd/even symmetry), reaches the others through
the standard's symmetries (``f(conj(z)) == conj(f(z))``, and ``f(-z) == -f(z)`` or ``f(z)``),
and takes the values the standard lists (C99's Annex G) where a part is infinite, NaN or zero.
Any other input with an infinite or NaN part gives ``NaN + NaN j``.
"""

import math

import tensorflow as tf

_PI = math.pi
_INF = math.inf
_NAN = math.nan


def _parts(a, b):
  """Named conditions on the parts (``b >= +0`` or NaN here)."""
  fa, fb = tf.math.is_finite(a), tf.math.is_finite(b)
  return dict(
      fa=fa, fb=fb, a0=tf.equal(a, 0), b0=tf.equal(b, 0), nan_a=tf.math.is_nan(a),
      nan_b=tf.math.is_nan(b), inf_a=tf.math.is_inf(a), pinf_a=tf.equal(a, _INF),
      ninf_a=tf.equal(a, -_INF), pinf_b=tf.equal(b, _INF))


def _value(v, like):
  """A rule's part (a Python float or a tensor) as a tensor of ``like``'s dtype. Not by
  tf.cast (it rounds a Python float through float32), nor tf.constant for zeros (TensorFlow's
  eager cache of scalars hands out -0.0 for 0.0 and back)."""
  if not isinstance(v, float):
    return v
  if v == 0:
    zero = tf.zeros_like(like)
    return -zero if math.copysign(1.0, v) < 0 else zero
  return tf.constant(v, like.dtype)


def _apply(a, b, base, rules):
  """``base`` (re, im) where both parts are finite, else NaN, then each rule, last wins."""
  finite = tf.logical_and(tf.math.is_finite(a), tf.math.is_finite(b))
  re = tf.where(finite, base[0], _value(_NAN, a))
  im = tf.where(finite, base[1], _value(_NAN, a))
  for mask, (r, i) in rules:
    re = tf.where(mask, _value(r, a), re)
    im = tf.where(mask, _value(i, a), im)
  return re, im


def _not_nan_sign(v):
  return tf.logical_and(tf.math.less(tf.bitcast(v, tf.int64 if v.dtype == tf.float64
                                                 else tf.int32), 0),
                        tf.logical_not(tf.math.is_nan(v)))


def special(fn, rules, parity=None):
  """``fn`` of complex ``z`` with ``rules(a, b, c)`` (a list of (mask, (re, im)); ``c`` from
  `_parts`) deciding the special values of ``a + b j`` in the region described above.
  ``parity`` "odd" or "even" reduces to ``a >= +0`` too."""
  def call(z):
    a, b = tf.math.real(z), tf.math.imag(z)
    flip_a = _not_nan_sign(a) if parity else tf.zeros_like(a, tf.bool)
    a, b = tf.where(flip_a, -a, a), tf.where(flip_a, -b, b)
    flip_b = _not_nan_sign(b)
    b = tf.where(flip_b, -b, b)
    finite = tf.logical_and(tf.math.is_finite(a), tf.math.is_finite(b))
    safe = tf.complex(tf.where(finite, a, tf.zeros_like(a)), tf.where(finite, b, tf.zeros_like(b)))
    out = fn(safe)
    re, im = _apply(a, b, (tf.math.real(out), tf.math.imag(out)), rules(a, b, _parts(a, b)))
    im = tf.where(flip_b, -im, im)
    if parity == "odd":  # f(z) = -f(-z); an even f(z) is f(-z) as it is.
      re, im = tf.where(flip_a, -re, re), tf.where(flip_a, -im, im)
    return tf.complex(re, im)
  return call


def _and(*masks):
  out = masks[0]
  for m in masks[1:]:
    out = tf.logical_and(out, m)
  return out


def _not(m):
  return tf.logical_not(m)


def _cis(scale, b):
  """``scale * cis(b)`` for finite ``b`` (``scale`` 0 or infinite)."""
  return scale * tf.math.cos(b), scale * tf.math.sin(b)


def exp_rules(a, b, c):
  big = tf.math.exp(a)
  return [(_and(c["inf_a"], c["fb"]), _cis(big, tf.where(c["fb"], b, tf.zeros_like(b)))),
          (_and(c["ninf_a"], _not(c["fb"])), (0.0, 0.0)),
          (_and(c["pinf_a"], _not(c["fb"])), (_INF, _NAN)),
          (c["b0"], (big, b))]


def expm1_rules(a, b, c):
  re, im = _cis(tf.math.exp(a), tf.where(c["fb"], b, tf.zeros_like(b)))
  return [(_and(c["inf_a"], c["fb"]), (re - 1.0, im)),
          (_and(c["ninf_a"], _not(c["fb"])), (-1.0, 0.0)),
          (_and(c["pinf_a"], _not(c["fb"])), (_INF, _NAN)),
          (c["b0"], (tf.where(c["a0"], tf.zeros_like(a), tf.math.expm1(a)), b))]


def _hyperbolic_rules(a, b, c, zero_a, on_real_axis):
  """cosh and sinh for ``a >= +0``: ``zero_a`` the value at ``+0 + (inf or NaN) j``."""
  return [(_and(c["a0"], _not(c["fb"])), zero_a),
          (_and(c["pinf_a"], c["fb"]), _cis(a, tf.where(c["fb"], b, tf.zeros_like(b)))),
          (_and(c["pinf_a"], _not(c["fb"])), (_INF, _NAN)),
          (c["b0"], (on_real_axis(a), b))]


def cosh_rules(a, b, c):
  return _hyperbolic_rules(a, b, c, (_NAN, 0.0), tf.math.cosh)


def sinh_rules(a, b, c):
  return _hyperbolic_rules(a, b, c, (0.0, _NAN), tf.math.sinh)


def tanh_rules(a, b, c):
  return [(_and(c["a0"], _not(c["fb"])), (0.0, _NAN)),
          (c["pinf_a"], (1.0, 0.0)),
          (c["b0"], (tf.math.tanh(a), b))]


def asinh_rules(a, b, c):
  return [(_and(c["fa"], c["pinf_b"]), (_INF, _PI / 2)),
          (_and(c["pinf_a"], c["fb"]), (_INF, 0.0)),
          (_and(c["pinf_a"], c["pinf_b"]), (_INF, _PI / 4)),
          (_and(c["pinf_a"], c["nan_b"]), (_INF, _NAN)),
          (_and(c["nan_a"], c["b0"]), (_NAN, 0.0)),
          (_and(c["nan_a"], c["pinf_b"]), (_INF, _NAN))]


def atanh_rules(a, b, c):
  return [(_and(c["a0"], c["nan_b"]), (0.0, _NAN)),
          (_and(tf.equal(a, 1.0), c["b0"]), (_INF, 0.0)),
          (_and(c["fa"], c["pinf_b"]), (0.0, _PI / 2)),
          (_and(c["pinf_a"], _not(c["nan_b"])), (0.0, _PI / 2)),
          (_and(c["pinf_a"], c["nan_b"]), (0.0, _NAN)),
          (_and(c["nan_a"], c["pinf_b"]), (0.0, _PI / 2))]


def acos_rules(a, b, c):
  return [(_and(c["a0"], c["b0"]), (_PI / 2, -0.0)),
          (_and(c["a0"], c["nan_b"]), (_PI / 2, _NAN)),
          (_and(c["fa"], c["pinf_b"]), (_PI / 2, -_INF)),
          (_and(c["ninf_a"], c["fb"]), (_PI, -_INF)),
          (_and(c["pinf_a"], c["fb"]), (0.0, -_INF)),
          (_and(c["ninf_a"], c["pinf_b"]), (3 * _PI / 4, -_INF)),
          (_and(c["pinf_a"], c["pinf_b"]), (_PI / 4, -_INF)),
          (_and(c["inf_a"], c["nan_b"]), (_NAN, _INF)),
          (_and(c["nan_a"], c["pinf_b"]), (_NAN, -_INF))]


def _infinite_log_rules(a, b, c):
  """log and log1p (and acosh's real part) where a part is infinite."""
  return [(_and(c["fa"], c["pinf_b"]), (_INF, _PI / 2)),
          (_and(c["ninf_a"], c["fb"]), (_INF, _PI)),
          (_and(c["pinf_a"], c["fb"]), (_INF, 0.0)),
          (_and(c["ninf_a"], c["pinf_b"]), (_INF, 3 * _PI / 4)),
          (_and(c["pinf_a"], c["pinf_b"]), (_INF, _PI / 4)),
          (_and(c["inf_a"], c["nan_b"]), (_INF, _NAN)),
          (_and(c["nan_a"], c["pinf_b"]), (_INF, _NAN))]


def acosh_rules(a, b, c):
  return [(_and(c["a0"], c["b0"]), (0.0, _PI / 2)),
          *_infinite_log_rules(a, b, c),
          (_and(c["a0"], c["nan_b"]), (_NAN, _PI / 2))]


def log_rules(a, b, c):
  zero_angle = tf.where(_not_nan_sign(a), tf.fill(tf.shape(a), tf.constant(_PI, a.dtype)),
                        tf.zeros_like(a))
  return [(_and(c["a0"], c["b0"]), (-_INF, zero_angle)), *_infinite_log_rules(a, b, c)]


def log1p_rules(a, b, c):
  return [(_and(tf.equal(a, -1.0), c["b0"]), (-_INF, 0.0)), *_infinite_log_rules(a, b, c)]


def sqrt_rules(a, b, c):
  del b
  root = tf.math.sqrt(tf.math.abs(a))  # On the real axis (XLA's polar form leaves 1e-17).
  negative = tf.less(a, 0)
  return [(_and(c["fa"], c["b0"]), (tf.where(negative, tf.zeros_like(a), root),
                                     tf.where(negative, root, tf.zeros_like(a)))),
          (_and(c["a0"], c["b0"]), (0.0, 0.0)),
          (_and(c["ninf_a"], c["fb"]), (0.0, _INF)),
          (_and(c["pinf_a"], c["fb"]), (_INF, 0.0)),
          (_and(c["ninf_a"], c["nan_b"]), (_NAN, _INF)),
          (_and(c["pinf_a"], c["nan_b"]), (_INF, _NAN)),
          (c["pinf_b"], (_INF, _INF))]
