"""backends/tensorflow/namespace/: TensorFlow's Array API 2024.12 namespace against NumPy's.

NumPy 2 is itself a 2024.12 namespace, so each case is one call written once and evaluated with
both: ``call(xp, *arrays)`` on tf.Tensors (eagerly and in ``tf.function(jit_compile=True)``)
must give NumPy's values and dtypes for the same inputs.
"""

import functools
import math
import sys
import types

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from crossgrad.backends.tensorflow import namespace as xp
from crossgrad.backends.tensorflow.namespace import _raw
from crossgrad.backends.tensorflow.namespace._dtypes import _host_ints

nan, inf = math.nan, math.inf
MODES = ("eager", "jit")

_F = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 7.0], np.float32)
_U = np.array([0.1, 0.3, 0.5, 0.7, 0.9], np.float64)  # Inside (-1, 1): asin, atanh...
_G = np.array([1.0, 1.5, 3.0, 10.0], np.float32)  # Above 1: acosh.
_NAN = np.array([[1.0, nan, 3.0], [-1.0, 2.0, -1.0]], np.float32)
_I = np.array([[3, -7, 0], [7, 2, -3]], np.int32)
_M = np.array([[[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]],
               [[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]]])
_C = (np.array([[2.0, 0.5], [0.5, 3.0]]) + 1j * np.array([[0.0, 1.0], [-1.0, 0.0]])).astype(
    np.complex128)
_A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5], [7.0, 8.0, 10.0], [1.0, 0.0, 1.0]])


def _run(mode, call, *arrays):
  """``call(xp, *tensors)`` eagerly, in a graph, or compiled; results as NumPy values."""
  tensors = [tf.constant(a) for a in arrays]
  fn = lambda *t: call(xp, *t)
  if mode != "eager":
    fn = tf.function(fn, jit_compile=mode == "jit", autograph=False)
  return tf.nest.map_structure(lambda t: t.numpy(), fn(*tensors))


def _check(mode, call, *arrays, rtol=1e-6, atol=0.0, expected=None):
  """The TF result equals NumPy's (or ``expected``) in values and dtypes. In a test under
  `_one_graph`, compiled checks run at the test's end, together."""
  if mode == "jit" and _PENDING is not None:
    line = sys._getframe(1).f_lineno  # pylint: disable=protected-access  # For its failure.
    _PENDING.append((call, arrays, rtol, atol, expected, line))
    return
  _compare(_run(mode, call, *arrays), call, arrays, rtol, atol, expected)


def _compare(got, call, arrays, rtol, atol, expected):
  if expected is None:
    with np.errstate(all="ignore"):
      expected = call(np, *arrays)
  got_flat, want_flat = tf.nest.flatten(got), tf.nest.flatten(
      tf.nest.map_structure(np.asarray, expected))
  assert len(got_flat) == len(want_flat)
  for g, w in zip(got_flat, want_flat):
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    assert g.shape == w.shape, (g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if g.dtype.kind == "f":  # Signed zeros are part of the value.
      np.testing.assert_array_equal(np.signbit(g[g == 0]), np.signbit(w[g == 0]))


_PENDING = None  # The compiled checks of the running `_one_graph` test.


def _run_together(checks):
  """Each check's ``call(xp, *its tensors)``, all in one ``tf.function(jit_compile=True)``
  (one XLA compilation); results as NumPy values, one per check."""
  sizes = [len(arrays) for _, arrays, *_ in checks]  # checks: `_PENDING`'s entries.
  tensors = [tf.constant(a) for _, arrays, *_ in checks for a in arrays]

  def every_check(*t):
    outs, start = [], 0
    for (call, *_), n in zip(checks, sizes):
      outs.append(call(xp, *t[start:start + n]))
      start += n
    return outs

  got = tf.function(every_check, jit_compile=True, autograph=False)(*tensors)
  return [tf.nest.map_structure(lambda t: t.numpy(), g) for g in got]


def _one_graph(test):
  """``test`` with its compiled (``mode="jit"``) checks compiled as one function once it
  has run, then compared as `_check` compares each: one compilation per test, not one per
  check."""
  @functools.wraps(test)
  def run(**kwargs):
    global _PENDING  # pylint: disable=global-statement
    if kwargs.get("mode") != "jit":
      return test(**kwargs)
    _PENDING = []
    try:
      test(**kwargs)
      checks = _PENDING
    finally:
      _PENDING = None
    for (*check, line), got in zip(checks, _run_together(checks) if checks else []):
      try:
        _compare(got, *check)
      except AssertionError as e:
        raise AssertionError(f"the check at line {line}: {e}") from e
  return run


# The standard's names (2024.12: 133 functions, 13 dtypes, 5 constants, 2 extensions). -------

_FUNCTIONS = """abs acos acosh add all any arange argmax argmin argsort asarray asin asinh astype
atan atan2 atanh bitwise_and bitwise_invert bitwise_left_shift bitwise_or bitwise_right_shift
bitwise_xor broadcast_arrays broadcast_to can_cast ceil clip concat conj copysign cos cosh
count_nonzero cumulative_prod cumulative_sum diff divide empty empty_like equal exp expand_dims
expm1 eye finfo flip floor floor_divide from_dlpack full full_like greater greater_equal hypot
iinfo imag isdtype isfinite isinf isnan less less_equal linspace log log10 log1p log2 logaddexp
logical_and logical_not logical_or logical_xor matmul matrix_transpose max maximum mean meshgrid
min minimum moveaxis multiply negative nextafter nonzero not_equal ones ones_like permute_dims
positive pow prod real reciprocal remainder repeat reshape result_type roll round searchsorted
sign signbit sin sinh sort sqrt square squeeze stack std subtract sum take take_along_axis tan
tanh tensordot tile tril triu trunc unique_all unique_counts unique_inverse unique_values unstack
var vecdot where zeros zeros_like""".split()
_DTYPE_NAMES = """bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64
complex128""".split()
_LINALG = """cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power
matrix_rank matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot
vector_norm""".split()
_FFT = """fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift
ifftshift""".split()


def test_public_names_are_exactly_the_standards():
  assert len(_FUNCTIONS) == 133
  want = set(_FUNCTIONS + _DTYPE_NAMES + ["e", "pi", "inf", "nan", "newaxis", "linalg", "fft"])
  assert set(xp.__all__) == want
  public = {n for n in dir(xp) if not n.startswith("_")}
  extra = {n: getattr(xp, n) for n in public - want}  # Only modules besides the standard:
  assert all(isinstance(m, types.ModuleType) for m in extra.values()), extra  # imports, parts.
  assert set(vars(xp.linalg)) == set(_LINALG) and set(vars(xp.fft)) == set(_FFT)
  assert all(getattr(xp, d) == tf.as_dtype(d) for d in _DTYPE_NAMES)
  assert callable(xp.__array_namespace_info__)


# Type promotion and Python scalars. ----------------------------------------------------------

_NP_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float32, np.float64, np.complex64, np.complex128]


def test_result_type_is_numpys_for_every_pair_of_dtypes():
  for a in _NP_DTYPES:
    for b in _NP_DTYPES:
      want = tf.as_dtype(np.result_type(a, b))
      assert xp.result_type(tf.as_dtype(a), tf.as_dtype(b)) == want, (a, b)
  assert xp.result_type(xp.int8, xp.uint8) == xp.int16  # The standard's table...
  assert xp.result_type(xp.float32, xp.complex128) == xp.complex128
  assert xp.result_type(xp.int32, xp.float32) == xp.float64  # ...and NumPy across kinds.


_SCALAR_CASES = [(d, s) for d in (np.bool_, np.int8, np.uint8, np.int32, np.float32, np.float64,
                                  np.complex64) for s in (True, 3, 2.5, 1j)
                 if not (d == np.bool_ and s is True)]  # Bool arithmetic is not standard.


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,scalar", _SCALAR_CASES)
@_one_graph
def test_python_scalars_are_weak_as_in_numpy(mode, dtype, scalar):
  x = np.array([0, 1, 1], dtype)
  _check(mode, lambda m, a: m.multiply(a, scalar), x)
  _check(mode, lambda m, a: m.add(scalar, a), x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@_one_graph
def test_python_scalars_keep_their_sign_also_nan(mode, dtype):
  """Each sign met after the other (eager scalars are kept tensors): copysign reads a NaN's
  sign bit, and where returns the scalar itself."""
  x, keep = np.array([1.0, -2.0], dtype), np.array([True, False])
  for scalar in (nan, -nan, nan, 0.0, -0.0, 0.0):
    got = _run(mode, lambda m, a, k: (m.copysign(a, scalar), m.where(k, a, scalar)), x, keep)
    assert np.array_equal(np.signbit(got[0]), np.signbit(np.copysign(x, scalar))), scalar
    assert np.signbit(got[1][1]) == np.signbit(scalar), scalar


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_mixed_arrays_promote(mode):
  i8, u8 = np.array([-3, 100], np.int8), np.array([200, 7], np.uint8)
  _check(mode, lambda m, a, b: m.add(a, b), i8, u8)  # int16
  _check(mode, lambda m, a, b: m.multiply(a, b), np.array([3, 5], np.int32),
         np.array([0.5, 2.0], np.float32))  # float64
  _check(mode, lambda m, a, b: m.divide(a, b), np.array([3, 5], np.int32),
         np.array([2, 4], np.int32))
  _check(mode, lambda m, a, b: m.equal(a, b), i8, u8)


# Elementwise functions. ----------------------------------------------------------------------

_UNARY = {
    "sin": _F, "cos": _F, "tan": _F, "sinh": _F, "cosh": _F, "tanh": _F, "asinh": _F,
    "atan": _F, "exp": _F, "expm1": _F, "asin": _U, "acos": _U, "atanh": _U, "acosh": _G,
    "log": _G, "log1p": _U, "log2": _G, "log10": _G, "sqrt": _G, "abs": _F, "negative": _F,
    "sign": _NAN, "floor": _F, "ceil": _F, "trunc": _F, "round": _F, "square": _F,
    "reciprocal": _G, "signbit": _F, "isnan": _NAN, "isfinite": _NAN, "isinf": _NAN,
    "positive": _F,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(_UNARY))
@_one_graph
def test_unary(mode, name):
  _check(mode, lambda m, a: getattr(m, name)(a), _UNARY[name], rtol=2e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["expm1", "log1p", "sqrt", "exp", "tanh", "sign", "round",
                                  "conj", "real", "imag", "abs"])
@_one_graph
def test_unary_complex(mode, name):
  z = np.array([1e-9 + 2e-9j, 0.3 - 0.2j, -1.5 + 2.5j, 0j], np.complex128)
  _check(mode, lambda m, a: getattr(m, name)(a), z, rtol=1e-12, atol=1e-15)  # NumPy: 1e-16.


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["log", "log2", "log10", "log1p"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@_one_graph
def test_complex_logarithms_far_from_and_near_one(mode, name, dtype):
  """TF's own complex log returns NaN real parts for tiny and huge magnitudes."""
  tiny, huge = (1e-30, 1e30) if dtype == np.complex64 else (1e-253, 1e200)
  z = np.array([-tiny * 1j, tiny * (1 - 1j), huge * (1 + 1j), 3 * tiny + 0j, 1 + 1e-4j,
                0.6 - 0.8j, -2.0 + 0.5j, 0j, -0.0 + 0j, complex(-inf, 1.0),
                complex(inf, nan)], dtype)
  rtol = 2e-6 if dtype == np.complex64 else 1e-12
  parts = lambda m, y: (m.real(y), m.imag(y))  # allclose compares complex infinities exactly.
  _check(mode, lambda m, a: parts(m, getattr(m, name)(a)), z, rtol=rtol, atol=1e-15)


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_division_follows_python(mode):
  a = np.array([-7.5, 7.5, -7.5, 7.5, 1.0, 5.0, -0.0, 3.0], np.float64)
  b = np.array([2.0, -2.0, -2.0, 2.0, 0.1, inf, 4.0, -inf], np.float64)
  python = np.floor_divide(a, b)
  python[-1] = -0.0  # 3 // -inf: the standard says -0 where Python and NumPy say -1.
  _check(mode, lambda m, x, y: m.floor_divide(x, y), a, b, expected=python)
  _check(mode, lambda m, x, y: m.remainder(x, y), a, b)
  i = np.array([7, -7, 7, 5, np.iinfo(np.int32).min], np.int32)
  j = np.array([2, 2, -2, 0, -1], np.int32)  # Division by zero and INT_MIN // -1 as NumPy.
  _check(mode, lambda m, x, y: m.floor_divide(x, y), i, j)
  _check(mode, lambda m, x, y: m.remainder(x, y), i, j)



def test_division_is_differentiable_in_both_modes():
  """remainder(x1, x2) has derivatives 1 and -floor(x1 / x2), floor_divide zero ones, under
  a tape and a forward accumulator alike (forward mode raised LookupError: TF has no
  gradient for the TruncateMod they used). Expected values: the formulas, at points away
  from the jumps."""
  a = tf.constant([-7.3, 7.3, -7.3, 7.3, 1.2], tf.float64)
  b = tf.constant([2.0, -2.0, -2.0, 2.0, 0.5], tf.float64)
  floor = np.floor(a.numpy() / b.numpy())
  da, db = tf.constant([1.0, 2.0, -1.0, 0.5, 3.0], tf.float64), tf.ones(5, tf.float64)
  for fn, tangent in ((xp.remainder, da.numpy() - floor * db.numpy()),
                      (xp.floor_divide, np.zeros(5))):
    with tf.autodiff.ForwardAccumulator([a, b], [da, db]) as acc:
      out = fn(a, b)
    jvp = acc.jvp(out, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_allclose(jvp.numpy(), tangent, rtol=1e-15)
    with tf.GradientTape() as tape:
      tape.watch([a, b])
      out = fn(a, b)
    ga, gb = tape.gradient(out, [a, b], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_allclose(ga.numpy(), np.ones(5) if fn is xp.remainder else np.zeros(5))
    np.testing.assert_allclose(gb.numpy(), -floor if fn is xp.remainder else np.zeros(5))

@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_binary_float_functions(mode):
  a = np.array([1.0, nan, -0.0, 3.0, -inf, 1e30], np.float32)
  b = np.array([nan, 2.0, 0.0, -4.0, 2.0, 1e30], np.float32)
  for name in ("maximum", "minimum", "hypot", "logaddexp", "copysign", "atan2", "nextafter",
               "pow"):
    _check(mode, lambda m, x, y: getattr(m, name)(x, y), a, b, rtol=2e-6)


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_bitwise_and_integer_pow(mode):
  x = np.array([1, -8, 5, 3, 1 << 20], np.int32)
  n = np.array([0, 1, 31, 32, 40], np.int32)  # Shifts past the width give 0 (or -1).
  _check(mode, lambda m, a, b: m.bitwise_left_shift(a, b), x, n)
  _check(mode, lambda m, a, b: m.bitwise_right_shift(a, b), x, n)
  _check(mode, lambda m, a, b: m.bitwise_xor(m.bitwise_and(a, b), m.bitwise_or(a, 6)), x, n)
  _check(mode, lambda m, a: m.bitwise_invert(a), x)
  u = np.array([3, 200, 255], np.uint8)
  _check(mode, lambda m, a: m.pow(a, 3), u)  # Wraps like NumPy.
  _check(mode, lambda m, a: m.pow(a, m.asarray([2, 1, 0], dtype=m.uint8)), u)
  signed = np.array([2, 1, -1, -1, 5], np.int64)
  exponent = np.array([-1, -3, -3, -2, 2], np.int64)  # NumPy raises; 1/x**n toward zero.
  got = _run(mode, lambda m, a, b: m.pow(a, b), signed, exponent)
  np.testing.assert_array_equal(got, [0, 1, -1, 1, 25])


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_clip_and_where(mode):
  _check(mode, lambda m, a: m.clip(a, -1.0, 2), _F)
  _check(mode, lambda m, a: m.clip(a, max=m.asarray([0.5], dtype=m.float32)), _NAN)
  _check(mode, lambda m, a: m.where(a > 0, a, 0.0), _F)
  _check(mode, lambda m, a: m.where(a > 0, 1, -1), _I)


# Creation and data type functions. -----------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_creation(mode):
  _check(mode, lambda m: m.arange(5))
  _check(mode, lambda m: m.arange(1, 2, 0.1, dtype=m.float64))
  _check(mode, lambda m: m.arange(10, 0, -3, dtype=m.int8))
  _check(mode, lambda m: m.linspace(0, 1, 7, dtype=m.float64), rtol=1e-15)
  _check(mode, lambda m: m.linspace(0, 1, 4, endpoint=False, dtype=m.float32))
  _check(mode, lambda m: m.eye(3, 4, k=1, dtype=m.int32))
  _check(mode, lambda m: m.full((2, 3), 7, dtype=m.uint16))
  _check(mode, lambda m: m.ones((2,), dtype=m.complex64))
  _check(mode, lambda m, a: m.tril(a, k=-1) + m.triu(a, k=2), _M)
  _check(mode, lambda m, a: m.add(m.zeros_like(a), m.ones_like(a, dtype=m.int64)), _I)
  _check(mode, lambda m, a, b: m.meshgrid(a, b), _U, _G.astype(np.float64))
  _check(mode, lambda m, a, b: m.meshgrid(a, b, indexing="ij"), _U, _G.astype(np.float64))


def test_default_dtypes_are_documented():
  info = xp.__array_namespace_info__()
  assert info.default_dtypes() == {"real floating": xp.float32, "complex floating": xp.complex64,
                                   "integral": xp.int64, "indexing": xp.int64}
  assert xp.asarray(1.5).dtype == xp.float32 and xp.asarray(1).dtype == xp.int64
  assert xp.asarray(1j).dtype == xp.complex64 and xp.asarray([True]).dtype == xp.bool
  assert xp.zeros(2).dtype == xp.float32 and xp.arange(3).dtype == xp.int64
  assert info.default_device() in info.devices()
  assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
  assert info.capabilities()["boolean indexing"] is False
  assert xp.__array_api_version__ == "2024.12"


def test_data_type_functions():
  assert xp.float32 == tf.constant(1.0).dtype and xp.bool == tf.constant(True).dtype
  for d in _NP_DTYPES[1:9]:
    info, want = xp.iinfo(tf.as_dtype(d)), np.iinfo(d)
    assert (info.bits, info.min, info.max) == (want.bits, want.min, want.max)
  for d in (np.float32, np.float64):
    info, want = xp.finfo(tf.as_dtype(d)), np.finfo(d)
    assert (info.eps, info.max, info.smallest_normal) == (want.eps, want.max,
                                                          want.smallest_normal)
  assert xp.finfo(xp.complex64).dtype == xp.float32
  assert xp.isdtype(xp.uint8, "integral") and not xp.isdtype(xp.uint8, "signed integer")
  assert xp.isdtype(xp.complex64, ("bool", "complex floating"))
  assert xp.can_cast(xp.int8, xp.int32) and not xp.can_cast(xp.int64, xp.uint64)


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_astype(mode):
  _check(mode, lambda m, a: m.astype(a, m.int16), _F)
  _check(mode, lambda m, a: m.astype(a, m.bool), _F)
  _check(mode, lambda m, a: m.astype(a, m.complex128), _I)


# Indexing, manipulation. ---------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_indexing(mode):
  _check(mode, lambda m, a: m.take(a, m.asarray([2, -1, 0]), axis=1), _I)
  _check(mode, lambda m, a: m.take(a[0], m.asarray([1, 1])), _I)
  labels = np.array([[2], [0]], np.int64)
  _check(mode, lambda m, a, j: m.take_along_axis(a, j, axis=1), _I, labels)
  _check(mode, lambda m, a: m.take_along_axis(a, m.argsort(a, axis=0), axis=0), _I)


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_manipulation(mode):
  x = _M
  _check(mode, lambda m, a: m.concat([a, a[:1]], axis=0), x)
  _check(mode, lambda m, a, b: m.concat([a, b], axis=None), _I, _F)
  _check(mode, lambda m, a: m.stack([a, 2 * a], axis=-1), _I)
  _check(mode, lambda m, a: m.moveaxis(a, (0, 1), (2, 0)), x)
  _check(mode, lambda m, a: m.permute_dims(a, (2, 0, 1)), x)
  _check(mode, lambda m, a: m.roll(a, 2), x)
  _check(mode, lambda m, a: m.roll(a, (1, -1), axis=(0, 2)), x)
  _check(mode, lambda m, a: m.tile(a, (2, 1, 1, 2)), _I)
  _check(mode, lambda m, a: m.repeat(a, 2, axis=1), _I)
  _check(mode, lambda m, a: m.flip(a, axis=(0, 2)), x)
  _check(mode, lambda m, a: m.squeeze(m.expand_dims(a, axis=1), axis=1), _I)
  _check(mode, lambda m, a: m.reshape(a, (3, -1)), _I)
  _check(mode, lambda m, a: m.broadcast_to(a[0], (2, 2, 3)), _I)
  _check(mode, lambda m, a, b: m.broadcast_arrays(a[:, None, :1], b), _I, _F[None, :])
  _check(mode, lambda m, a: m.unstack(a, axis=1), _I)


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_functions_the_conformance_suite_checks_with_operators(mode):
  """Mixed dtypes, int8 repeats, 11 dimensions: the namespace is right where array-api-tests
  fails TF on tf.Tensor's operators and indexing (see docs/array-api.md)."""
  i8, i16, u8 = (np.array([5, -14, 0], np.int8), np.array([-3, 2, 7], np.int16),
                 np.array([5, 14, 0], np.uint8))
  _check(mode, lambda m, a, b: m.concat([a, b]), i8, np.array([300], np.int64))
  _check(mode, lambda m, a, b: m.stack([a, b], axis=1), i8, i16)
  _check(mode, lambda m, a, b: m.where(a > 0, a, b), i8, i16)
  _check(mode, lambda m, a, b: m.linalg.cross(a, b), u8, i16)  # int16: [98, -35, 52].
  _check(mode, lambda m, a, b: m.linalg.outer(a, b), np.array([3, 0, 9], np.uint16), u8)
  _check(mode, lambda m, a: m.repeat(a, 3), i8)
  _check(mode, lambda m, a: m.reshape(a, (1, 1, 1, 1, 3, 1, 1, 1, 1, 1, -1)), u8)


def test_manipulation_errors_and_data_dependent_repeat():
  with pytest.raises(ValueError):
    xp.squeeze(tf.zeros([2, 3]), axis=0)
  with pytest.raises(IndexError):
    xp.expand_dims(tf.zeros([2]), axis=3)
  got = xp.repeat(tf.constant([1, 2, 3], tf.uint16), tf.constant([0, 2, 1]))  # uint16: no TF
  np.testing.assert_array_equal(got, [2, 2, 3])  # kernel; done on an int16 view.
  got = xp.repeat(tf.constant([1.5, -2.0]), tf.constant([2, 3], tf.int8))  # int8 repeats.
  np.testing.assert_array_equal(got, [1.5, 1.5, -2.0, -2.0, -2.0])


# Searching, sorting, sets. -------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_searching(mode):
  ties = np.array([[1.0, 3.0, 3.0, nan, nan], [2.0, -1.0, -1.0, 0.0, 2.0]], np.float32)
  for keepdims in (False, True):
    _check(mode, lambda m, a: m.argmax(a, axis=1, keepdims=keepdims), ties)  # First NaN, then
    _check(mode, lambda m, a: m.argmin(a, axis=1, keepdims=keepdims), ties)  # first of ties.
  _check(mode, lambda m, a: m.argmax(a), _I)
  _check(mode, lambda m, a: m.count_nonzero(a, axis=0), _I)
  sorted_ = np.array([-1.0, 0.0, 2.0, 2.0, 5.0], np.float32)
  values = np.array([[2.0, -3.0], [9.0, 0.0]], np.float32)
  for side in ("left", "right"):
    _check(mode, lambda m, a, v: m.searchsorted(a, v, side=side), sorted_, values)


@pytest.mark.parametrize("mode", ["eager", "graph"])
@_one_graph
def test_data_dependent_shapes(mode):
  _check(mode, lambda m, a: m.nonzero(a), _I)
  x = np.array([3.0, nan, 1.0, -0.0, 3.0, nan, 0.0, 1.0], np.float32)
  _check(mode, lambda m, a: tuple(m.unique_all(a)), x)  # NaNs distinct, zeros one value.
  _check(mode, lambda m, a: tuple(m.unique_counts(a)), _I)
  _check(mode, lambda m, a: tuple(m.unique_inverse(a)), _I)
  z = np.array([1j, 1, 1j, -1j], np.complex64)
  np.testing.assert_array_equal(np.sort(_run(mode, lambda m, a: m.unique_values(a), z)),
                                [-1j, 1j, 1])  # Unordered in NumPy 2.4, sorted here.


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_sorting(mode):
  x = np.array([[2.0, nan, -0.0, 1.0, 0.0, -inf, 1.0], [3.0, 3.0, 1.0, nan, 2.0, 1.0, 0.0]],
               np.float32)
  _check(mode, lambda m, a: m.sort(a, axis=1), x)  # NaN last, as NumPy.
  _check(mode, lambda m, a: m.argsort(a, axis=1), x, expected=np.argsort(x, axis=1,
                                                                         stable=True))
  _check(mode, lambda m, a: m.argsort(a, axis=1, descending=True), x,
         expected=np.array([[1, 0, 3, 6, 2, 4, 5], [3, 0, 1, 4, 2, 5, 6]]))
  _check(mode, lambda m, a: m.sort(a, axis=0, descending=True), _I,
         expected=-np.sort(-_I, axis=0))
  big = np.array([2**64 - 1, 3, 2**63, 0], np.uint64)
  _check(mode, lambda m, a: m.sort(a), big)
  _check(mode, lambda m, a: m.argsort(a), big)
  _check(mode, lambda m, a: m.sort(a), np.array([True, False, True]))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@_one_graph
def test_sorting_in_half_precision(mode, dtype):
  """float16 and bfloat16 sort, argsort and find their extremes as float32 does, in NumPy's
  order (NaN last; the first NaN is the extreme): they raised TypeError."""
  x32 = np.array([[2.0, nan, -0.0, 1.0, 0.0, -inf, 1.0], [3.0, 3.0, 1.0, nan, 2.0, 1.0, 0.0]],
                 np.float32)
  x = x32.astype(dtype)
  _check(mode, lambda m, a: m.argsort(a, axis=1), x,
         expected=np.argsort(x32, axis=1, stable=True))
  _check(mode, lambda m, a: m.argsort(a, axis=1, descending=True), x,
         expected=np.array([[1, 0, 3, 6, 2, 4, 5], [3, 0, 1, 4, 2, 5, 6]]))
  _check(mode, lambda m, a: m.argmax(a, axis=1), x, expected=np.argmax(x32, axis=1))
  _check(mode, lambda m, a: m.argmin(a, axis=1), x, expected=np.argmin(x32, axis=1))
  got = _run(mode, lambda m, a: m.sort(a, axis=1), x)
  assert got.dtype == x.dtype
  np.testing.assert_array_equal(got.astype(np.float32), np.sort(x32, axis=1))


# Statistical and utility functions. ----------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_statistics(mode):
  _check(mode, lambda m, a: m.var(a, axis=1, correction=1), _M, rtol=1e-12)
  _check(mode, lambda m, a: m.var(a, axis=0, correction=0.3), _M, rtol=1e-12)
  _check(mode, lambda m, a: m.std(a, axis=(0, 2), keepdims=True), _M, rtol=1e-12)
  _check(mode, lambda m, a: m.mean(a, axis=-1), _M)
  _check(mode, lambda m, a: m.sum(m.astype(a, m.int8), axis=0), _I)  # int8 sums to int64.
  _check(mode, lambda m, a: m.sum(a, dtype=m.float64), _F)
  _check(mode, lambda m, a: m.prod(m.astype(a, m.uint8), axis=1), _I)
  _check(mode, lambda m, a: m.max(a, axis=1), _NAN)  # NaN propagates.
  _check(mode, lambda m, a: m.min(a, axis=0), _NAN)
  _check(mode, lambda m, a: m.cumulative_sum(a, axis=1, include_initial=True), _I)
  _check(mode, lambda m, a: m.cumulative_prod(a, axis=0), _M)
  _check(mode, lambda m, a: m.all(a, axis=0), _I)
  _check(mode, lambda m, a: m.any(a > 5, axis=(0, 1)), _I)
  _check(mode, lambda m, a: m.diff(a, axis=1, n=2, prepend=a[:, :1]), _I)


# Linear algebra. -----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_linalg_values(mode):
  la = lambda m: m.linalg
  _check(mode, lambda m, a: la(m).det(a), _M, rtol=1e-12)
  _check(mode, lambda m, a: tuple(la(m).slogdet(a)), _M, rtol=1e-12)
  singular = np.array([[1.0, 2.0], [2.0, 4.0]])
  _check(mode, lambda m, a: tuple(la(m).slogdet(a)), singular)
  _check(mode, lambda m, a: la(m).det(a), np.array([[0.0, 2.0], [3.0, 1.0]]))  # Pivoting.
  _check(mode, lambda m, a: la(m).inv(a), _M, rtol=1e-12)
  _check(mode, lambda m, a, b: la(m).solve(a, b), _M, _M[:1, :, :2], rtol=1e-12, atol=1e-15)
  _check(mode, lambda m, a, b: la(m).solve(a, b), _M[0], _M[1, 0], rtol=1e-12)
  _check(mode, lambda m, a: la(m).cholesky(a, upper=True), _M, rtol=1e-12)
  _check(mode, lambda m, a: la(m).eigvalsh(a), _M, rtol=1e-12)
  _check(mode, lambda m, a: la(m).eigvalsh(a), _C, rtol=1e-12)
  _check(mode, lambda m, a: la(m).svdvals(a), _A, rtol=1e-12)
  _check(mode, lambda m, a: la(m).pinv(a), _A, rtol=1e-10 if mode == "eager" else 1e-6)  # XLA SVD.
  _check(mode, lambda m, a: la(m).matrix_rank(a), np.stack([_A, _A * [[1], [1], [0], [0]]]))
  for ord_ in ("fro", "nuc", 1, -1, 2, -2, inf, -inf):
    _check(mode, lambda m, a: la(m).matrix_norm(a, ord=ord_), _M, rtol=1e-12)
  for ord_ in (1, 2, 3, 0, inf, -inf, -1):
    _check(mode, lambda m, a: la(m).vector_norm(a, axis=(0, 2), ord=ord_), _M, rtol=1e-12)
  _check(mode, lambda m, a: la(m).vector_norm(a, keepdims=True), _C, rtol=1e-12)
  _check(mode, lambda m, a: la(m).matrix_power(a, 3) + la(m).matrix_power(a, -2)
         + la(m).matrix_power(a, 0), _M, rtol=1e-12)
  _check(mode, lambda m, a: la(m).trace(a, offset=1) + la(m).diagonal(a, offset=-1)[..., 0], _M)
  _check(mode, lambda m, a, b: la(m).cross(a, b), _M[0], _M[1])
  _check(mode, lambda m, a: la(m).outer(a[0], a[1]), _I)
  _check(mode, lambda m, a: m.vecdot(a, a[:1]), _C)
  _check(mode, lambda m, a, b: m.tensordot(a, b, axes=([0, 2], [0, 1])), _M, _M)
  _check(mode, lambda m, a: m.matmul(a[0, 0], a) + m.matmul(a, a[0, 0]), _M)
  _check(mode, lambda m, a: m.matmul(m.astype(a, m.int8), m.astype(a, m.int8)), _M * 10)
  _check(mode, lambda m, a: m.matrix_transpose(a), _M)


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_linalg_factorizations_reconstruct(mode):
  def reconstructions(m, a):
    w, v = m.linalg.eigh(a)
    q, r = m.linalg.qr(a)
    u, s, vh = m.linalg.svd(a, full_matrices=False)
    return (m.matmul(v * w[..., None, :], m.matrix_transpose(v)), m.matmul(q, r),
            m.matmul(u * s[..., None, :], vh), r)
  *products, r = _run(mode, reconstructions, _M)
  # TF's XLA SVD and eigh stop at a fixed tolerance near 1e-6, even in float64.
  for product in products:
    np.testing.assert_allclose(product, _M, atol=1e-12 if mode == "eager" else 1e-6)
  np.testing.assert_array_equal(r, np.triu(r))
  w, v = _run(mode, lambda m, a: tuple(m.linalg.eigh(a)), _C)
  np.testing.assert_allclose((v * w) @ v.conj().T, _C, atol=1e-12 if mode == "eager" else 1e-6)
  assert w.dtype == np.float64


def test_linalg_complex_svd_is_eager_only_and_documented():
  np.testing.assert_allclose(xp.linalg.svdvals(tf.constant(_C)),
                             np.linalg.svdvals(_C), rtol=1e-12)
  assert "no complex SVD" in xp.__doc__


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_fft(mode):
  z = _M + 1j * _M[::-1]
  tol = dict(rtol=1e-12, atol=1e-12)
  _check(mode, lambda m, a: m.fft.fft(a, n=5, axis=1), z, **tol)
  _check(mode, lambda m, a: m.fft.ifftn(a, axes=(0, 2), norm="ortho"), z, **tol)
  _check(mode, lambda m, a: m.fft.rfft(a, axis=0, norm="forward"), _M, **tol)
  _check(mode, lambda m, a: m.fft.irfftn(a, s=(2, 4), axes=(0, 2)), z, **tol)
  _check(mode, lambda m, a: m.fft.hfft(a, n=6), z, **tol)
  _check(mode, lambda m, a: m.fft.fftshift(m.fft.ifftshift(a, axes=1)), _M)
  _check(mode, lambda m: m.fft.fftfreq(5, d=0.5, dtype=m.float64),
         expected=np.fft.fftfreq(5, d=0.5))


def test_from_dlpack_aliases_aligned_buffers_and_copies_the_rest():
  buffer = np.zeros(16)
  start = (-buffer.ctypes.data % 64) // 8
  aligned, shifted = buffer[start:start + 3], buffer[start + 1:start + 4]
  alias, copy = xp.from_dlpack(aligned), xp.from_dlpack(aligned, copy=True)
  moved = xp.from_dlpack(shifted)  # TF's kernels would abort on it: copied.
  buffer[start + 1] = 9.0
  np.testing.assert_array_equal(xp.multiply(alias, 2.0), [0.0, 18.0, 0.0])
  np.testing.assert_array_equal(xp.multiply(copy, 2.0), [0.0, 0.0, 0.0])
  np.testing.assert_array_equal(xp.multiply(moved, 2.0), [0.0, 0.0, 0.0])
  with pytest.raises(BufferError):
    xp.from_dlpack(shifted, copy=False)
  np.testing.assert_array_equal(xp.from_dlpack(tf.constant([1, 2], tf.uint64), copy=True), [1, 2])


# The standard's complex special cases (C99 Annex G), one or more per listed function, with the
# signs the standard specifies. XLA's own complex kernels drop NaNs and signs of zero in most.
_COMPLEX_CASES = [
    ("exp", complex(1.5, nan), complex(nan, nan)), ("exp", complex(-inf, nan), 0j),
    ("exp", complex(inf, nan), complex(inf, nan)), ("exp", complex(nan, 0.0), complex(nan, 0.0)),
    ("exp", complex(1.5, -0.0), complex(math.exp(1.5), -0.0)),
    ("expm1", complex(-inf, nan), complex(-1.0, 0.0)), ("expm1", complex(inf, 0.0), inf + 0j),
    ("cosh", complex(inf, nan), complex(inf, nan)), ("cosh", complex(nan, 1.0), complex(nan, nan)),
    ("sinh", complex(0.0, nan), complex(0.0, nan)), ("sinh", complex(inf, 0.0), inf + 0j),
    ("sinh", complex(-inf, -0.0), complex(-inf, -0.0)),
    ("tanh", complex(inf, nan), 1 + 0j), ("tanh", complex(0.0, nan), complex(0.0, nan)),
    ("tanh", complex(-inf, 2.0), complex(-1.0, 0.0)),
    ("atanh", complex(0.0, nan), complex(0.0, nan)), ("atanh", complex(1.0, 0.0), inf + 0j),
    ("atanh", complex(inf, nan), complex(0.0, nan)),
    ("asinh", complex(nan, 0.0), complex(nan, 0.0)), ("asinh", complex(inf, inf),
                                                     complex(inf, math.pi / 4)),
    ("acosh", complex(0.0, nan), complex(nan, math.pi / 2)),
    ("acosh", complex(-inf, nan), complex(inf, nan)), ("acosh", complex(-0.0, 0.0),
                                                        complex(0.0, math.pi / 2)),
    ("acos", complex(0.0, nan), complex(math.pi / 2, nan)), ("acos", complex(0.0, 0.0),
                                                            complex(math.pi / 2, -0.0)),
    ("acos", complex(nan, inf), complex(nan, -inf)), ("acos", complex(-inf, inf),
                                                      complex(3 * math.pi / 4, -inf)),
    ("log", complex(inf, nan), complex(inf, nan)), ("log", complex(nan, inf), complex(inf, nan)),
    ("log", complex(-0.0, 0.0), complex(-inf, math.pi)),
    ("log1p", complex(-inf, nan), complex(inf, nan)), ("log1p", complex(-1.0, 0.0), -inf + 0j),
    ("sqrt", complex(-inf, nan), complex(nan, inf)), ("sqrt", complex(inf, nan), complex(inf, nan)),
    ("sqrt", complex(nan, inf), complex(inf, inf)), ("sqrt", complex(-4.0, 0.0), 2j),
    ("sqrt", complex(-4.0, -0.0), complex(0.0, -2.0)),
    # abs: +inf if a part is infinite (even beside NaN), else NaN if a part is NaN (XLA's
    # expansion gave sqrt(2) for 1 + NaN j and NaN for NaN - inf j); sign: NaN + NaN j if a
    # part is NaN (XLA's gave 0j for 0 + NaN j), 0 at 0, else x / |x|.
    ("abs", complex(1.0, nan), complex(nan, 0.0)), ("abs", complex(nan, -inf), inf + 0j),
    ("abs", complex(-inf, nan), inf + 0j), ("abs", complex(0.0, nan), complex(nan, 0.0)),
    ("abs", complex(3.0, -4.0), 5 + 0j),
    ("sign", complex(0.0, nan), complex(nan, nan)), ("sign", complex(nan, 1.5),
                                                     complex(nan, nan)),
    ("sign", complex(-0.0, 0.0), 0j), ("sign", complex(3.0, -4.0), complex(0.6, -0.8)),
]


def _same_special(got, want, rtol, what):
  """Equal parts (to ``rtol``), NaN equal to NaN, the sign of a zero part significant."""
  for g, w in ((got.real, want.real), (got.imag, want.imag)):
    if math.isnan(w):
      assert math.isnan(g), (what, got, want)
    elif w == 0 or math.isinf(w):
      assert g == w and math.copysign(1.0, g) == math.copysign(1.0, w), (what, got, want)
    else:
      assert abs(g - w) <= rtol * abs(w), (what, got, want)


@pytest.mark.parametrize("mode, dtype", [("eager", np.complex64), ("eager", np.complex128),
                                         ("jit", np.complex128)])  # One compilation: ~10 s.
@_one_graph
def test_complex_special_cases(mode, dtype):
  """All cases in one call (one XLA compilation), a 1-D array of a function's cases each."""
  rtol = 1e-6 if dtype == np.complex64 else 1e-15
  names = sorted({name for name, _, _ in _COMPLEX_CASES})
  cases = [[(z, w) for n, z, w in _COMPLEX_CASES if n == name] for name in names]
  got = _run(mode, lambda m, *zs: [getattr(m, n)(z) for n, z in zip(names, zs)],
             *[np.array([z for z, _ in c], dtype) for c in cases])
  for name, c, g in zip(names, cases, got):
    for (z, want), value in zip(c, g):
      _same_special(complex(value), want, rtol, (name, z))


@pytest.mark.parametrize("mode", MODES)
@_one_graph
def test_cumulative_of_small_and_unsigned_integers(mode):
  """XLA has no cumsum/cumprod of 8/16-bit or unsigned integers; products wrap as NumPy's."""
  u8, i16 = np.array([200, 100, 3, 0, 255], np.uint8), np.array([300, -7, 2, 9, 4], np.int16)
  u64 = np.array([2**63, 2**63 + 5, 3], np.uint64)
  _check(mode, lambda m, a, b, c: [
      m.cumulative_sum(a), m.cumulative_prod(a, dtype=m.uint8), m.cumulative_sum(b),
      m.cumulative_prod(b, dtype=m.int16), m.cumulative_sum(c), m.cumulative_prod(c)],
         u8, i16, u64)


_RAW_CASES = {  # _raw's function, its public wrapper, the arguments (tensors from NumPy).
    "cast": (lambda x: _raw.cast(x, tf.int32), lambda x: tf.cast(x, tf.int32), (_F,)),
    "cast_bool": (lambda x: _raw.cast(x > 0, tf.float32), lambda x: tf.cast(x > 0, tf.float32),
                  (_F,)),
    "real_abs": (_raw.real_abs, tf.math.abs, (_F,)),
    "real_sign": (_raw.real_sign, tf.math.sign, (_NAN,)),
    "multiply": (_raw.multiply, tf.math.multiply, (_F, _F[::-1])),
    "select": (lambda x, y: _raw.select(x > y, x, y), lambda x, y: tf.where(x > y, x, y),
               (_F, _F[::-1])),
    "reduce_sum": (lambda x: _raw.reduce_sum(x, [1], keepdims=True),
                   lambda x: tf.reduce_sum(x, [1], keepdims=True), (_A,)),
    "matmul": (lambda a, b: _raw.matmul(a, b, True, False),
               lambda a, b: tf.linalg.matmul(a, b, transpose_a=True), (_A, _A[:, :2])),
    "matmul_batch": (lambda a, b: _raw.matmul(a, b, False, True),
                     lambda a, b: tf.linalg.matmul(a, b, transpose_b=True), (_M, _M)),
    "matmul_complex": (lambda a, b: _raw.matmul(a, b, True, False),
                       lambda a, b: tf.linalg.matmul(a, b, transpose_a=True), (_C, _C)),
}


def _op_types(fn, tensors):
  graph = tf.function(fn, autograph=False).get_concrete_function(*tensors).graph
  return sorted(n.op for n in graph.as_graph_def().node if n.op not in ("Placeholder", "Const",
                                                                        "Identity"))


@pytest.mark.parametrize("name", sorted(_RAW_CASES))
def test_raw_ops_are_their_wrappers_ops(name):
  """Each `_raw` function runs the op its public TensorFlow wrapper runs: the same graph ops,
  the same values eagerly, the same gradients (second order too, where it has one)."""
  raw, public, arrays = _RAW_CASES[name]
  tensors = [tf.constant(a) for a in arrays]
  assert _op_types(raw, tensors) == _op_types(public, tensors)
  for ours, theirs in zip(tf.nest.flatten(raw(*tensors)), tf.nest.flatten(public(*tensors))):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  if not tensors[0].dtype.is_floating:
    return

  def grads(fn):
    with tf.GradientTape() as outer:
      outer.watch(tensors)
      with tf.GradientTape() as inner:
        inner.watch(tensors)
        out = tf.cast(fn(*tensors), tensors[0].dtype)
        loss = tf.reduce_sum(out * out)
      first = inner.gradient(loss, tensors)
      total = tf.add_n([tf.reduce_sum(g * g) for g in first if g is not None] or [loss])
    second = outer.gradient(total, tensors)
    return [g.numpy() for g in first + second if g is not None]

  for ours, theirs in zip(grads(raw), grads(public), strict=True):
    np.testing.assert_array_equal(ours, theirs)


def test_shapes_reach_tensorflow_as_kept_int32_tensors_where_int32_holds_them():
  """Eagerly a shape becomes one kept int32 tensor per tuple (a list is converted on every
  call); a size past int32's range stays a list, which TensorFlow converts to int64."""
  kept = _host_ints([4, -1])
  assert kept is _host_ints((4, -1)) and kept.dtype == tf.int32
  assert _host_ints([2**31, -1]) == [2**31, -1]
  assert tf.reshape(tf.zeros([0]), _host_ints([2**31, 0])).shape == (2**31, 0)
  np.testing.assert_array_equal(xp.reshape(tf.range(6), (3, -1)).numpy(), [[0, 1], [2, 3], [4, 5]])
