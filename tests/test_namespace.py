"""Every backend's ``xp`` is the Array API standard 2024.12 plus crossgrad's extensions."""

import inspect
import math

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.registry import namespace

_X = np.array([[-1.5, -0.5, 0.0], [0.5, 1.5, 2.5]])
_Y = np.array([[2.0, -1.0, 0.5], [0.25, 3.0, -2.0]])
_P = np.array([[0.5, 1.0, 2.0], [3.0, 4.0, 5.0]])

# One call per documented function: name -> (inputs, call). Inputs are converted to
# each backend's arrays; the result must equal NumPy's (the reference table's) result.
CALLS = {
    "abs": ((_X,), lambda xp, x: xp.abs(x)),
    "negative": ((_X,), lambda xp, x: xp.negative(x)),
    "sign": ((_X,), lambda xp, x: xp.sign(x)),
    "exp": ((_X,), lambda xp, x: xp.exp(x)),
    "log": ((_P,), lambda xp, x: xp.log(x)),
    "sqrt": ((_P,), lambda xp, x: xp.sqrt(x)),
    "square": ((_X,), lambda xp, x: xp.square(x)),
    "tanh": ((_X,), lambda xp, x: xp.tanh(x)),
    "maximum": ((_X, _Y), lambda xp, x, y: xp.maximum(x, y) + xp.maximum(x, 0.0)),
    "minimum": ((_X, _Y), lambda xp, x, y: xp.minimum(x, y) + xp.minimum(1.0, x)),
    "round": ((_X,), lambda xp, x: xp.round(x)),  # -1.5, -0.5, 0.5, 1.5, 2.5: half to even.
    "floor": ((_X,), lambda xp, x: xp.floor(x)),
    "ceil": ((_X,), lambda xp, x: xp.ceil(x)),
    "clip": ((_X,), lambda xp, x: xp.clip(x, -1.0, 1.0) + xp.clip(x, None, 0.5)
             + xp.clip(x, 0.0, None)),
    "where": ((_X, _Y), lambda xp, x, y: xp.where(x > y, x, 0.0) + xp.where(x < 0, -1.0, y)),
    "less": ((_X, _Y), lambda xp, x, y: xp.less(x, y)),
    "less_equal": ((_X, _Y), lambda xp, x, y: xp.less_equal(x, 0.0)),
    "greater": ((_X, _Y), lambda xp, x, y: xp.greater(x, y)),
    "greater_equal": ((_X, _Y), lambda xp, x, y: xp.greater_equal(x, 0.5)),
    "equal": ((_X, _Y), lambda xp, x, y: xp.equal(x, 0.0)),
    "logical_and": ((_X, _Y), lambda xp, x, y: xp.logical_and(x > 0, y > 0)),
    "logical_or": ((_X, _Y), lambda xp, x, y: xp.logical_or(x > 0, y > 0)),
    "logical_not": ((_X,), lambda xp, x: xp.logical_not(x > 0)),
    "sum": ((_X,), lambda xp, x: xp.sum(x, axis=0) + xp.sum(x)),
    "mean": ((_X,), lambda xp, x: xp.mean(x, axis=1, keepdims=True)),
    "max": ((_X,), lambda xp, x: xp.max(x, axis=(0, 1))),
    "min": ((_X,), lambda xp, x: xp.min(x, axis=-1)),
    "reshape": ((_X,), lambda xp, x: xp.reshape(x, (3, 2))),
    "permute_dims": ((_X,), lambda xp, x: xp.matrix_transpose(x) * 2.0
                     + xp.permute_dims(x, (1, 0))),
    "broadcast_to": ((_X,), lambda xp, x: xp.broadcast_to(x[:1], (4, 3))),
    "expand_dims": ((_X,), lambda xp, x: xp.expand_dims(x, 1)),
    "matmul": ((_X, _Y), lambda xp, x, y: xp.matmul(x, xp.matrix_transpose(y))),
    "take": ((_X,), lambda xp, x: xp.take(x, np.array([2, -1, 0, 3]), axis=1)
             + xp.take(x, np.array([[1], [2]]), axis=0)[:, 0, :1]),  # Bad indices read 0.
    "zeros_like": ((_X,), lambda xp, x: xp.zeros_like(x)),
    "ones_like": ((_X,), lambda xp, x: xp.ones_like(x)),
    "full_like": ((_X,), lambda xp, x: xp.full_like(x, 3.0)),
    "zeros": ((_X,), lambda xp, x: xp.zeros((2, 3), dtype=x.dtype) + x),
    "ones": ((_X,), lambda xp, x: xp.ones((2, 3), dtype=xp.float32)),
    "astype": ((_X,), lambda xp, x: xp.astype(x, xp.int32)),
    "unbroadcast": ((_X, _Y), lambda xp, x, y: xp.unbroadcast(xp.expand_dims(x, 0) * 2.0,
                                                             x[:1]) + xp.unbroadcast(y, y)
                      + xp.unbroadcast(y, y[:1]) + xp.unbroadcast(x, x[:, :1])),
    "bitwise_xor": ((_X,), lambda xp, x: xp.bitwise_xor(xp.astype(x * 4, xp.int32), 5)),
    "bitwise_or": ((_X,), lambda xp, x: xp.bitwise_or(xp.astype(x * 4, xp.int32), 6)),
    "bitwise_left_shift": ((_X,), lambda xp, x: xp.bitwise_left_shift(
        xp.astype(x * 4, xp.int32), 3)),
    "bitwise_right_shift": ((_X,), lambda xp, x: xp.bitwise_right_shift(
        xp.astype(x * 4, xp.int32), 1)),
    "arange": ((_X,), lambda xp, x: xp.arange(4, dtype=xp.int32)),
    "concat": ((_X, _Y), lambda xp, x, y: xp.concat([x, y], axis=1)),
    "cumulative_sum": ((_X,), lambda xp, x: xp.cumulative_sum(x, axis=1) + xp.astype(
        xp.cumulative_sum(xp.astype(x, xp.int32), axis=0, dtype=xp.int32), x.dtype)),
    "segment_sum": ((_X,), lambda xp, x: xp.segment_sum(
        x, xp.arange(2, dtype=xp.int32) * 3 - 1, 3)),  # Ids -1 (dropped) and 2.
    "segment_min": ((_X, _Y), lambda xp, x, y: xp.segment_min(
        xp.concat([x, y], axis=0), xp.arange(4, dtype=xp.int32) % 2, 3)),
    # Labels -1..3 against depth 3: out-of-range rows are all zero in every backend.
    "erf": ((_X,), lambda xp, x: xp.erf(x) + xp.erf(3.0 * x)),
    "one_hot": ((_X,), lambda xp, x: xp.one_hot(xp.astype(xp.floor(x + 0.5), xp.int32), 3,
                                                 dtype=x.dtype)),
}


BACKENDS = ("numpy", "jax", "tensorflow")


def test_every_extension_has_a_case():
  assert set(namespace.EXTENSIONS) == {"take", "segment_sum", "segment_min", "one_hot",
                                       "unbroadcast", "erf"}
  assert set(namespace.EXTENSIONS) <= set(CALLS)
  assert set(CALLS) <= set(namespace.FUNCTIONS) | set(namespace.EXTENSIONS)


@pytest.mark.parametrize("backend", (*BACKENDS, "torch"))
def test_extensions_have_the_documented_signatures(backend):
  """An op that calls an extension as its documentation says runs in every backend: no
  backend names a parameter otherwise or takes it positionally where others do not."""
  xp = getattr(cg, backend).xp
  for name, doc in namespace.EXTENSIONS.items():
    documented = doc.split(":", 1)[0]
    assert f"{name}{inspect.signature(getattr(xp, name))}" == documented, backend


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_backend_namespace_matches_numpy(backend, dtype):
  module = getattr(cg, backend)
  import jax  # pylint: disable=g-import-not-at-top
  with jax.enable_x64(dtype == "float64"):
    for name, (inputs, call) in CALLS.items():
      inputs = [x.astype(dtype) for x in inputs]
      expected = np.asarray(call(cg.numpy.xp, *inputs))
      got = np.asarray(call(module.xp, *_as_backend(backend, inputs)))
      assert got.dtype == expected.dtype, f"{backend} xp.{name}: dtype {got.dtype}"
      np.testing.assert_allclose(got, expected, rtol=1e-6, err_msg=f"{backend} xp.{name}")


@pytest.mark.parametrize("backend, compiled", [("numpy", False)] + [
    (b, c) for b in ("tensorflow", "jax", "torch") for c in (False, True)])
def test_segment_min_propagates_nan_in_every_backend_and_mode(backend, compiled):
  data = np.array([[2.0], [np.nan], [1.0], [3.0], [5.0]])
  ids = np.array([0, 1, 1, 2, 2], np.int32)  # NaN first in its segment, then after a number.
  data_2 = np.array([[2.0], [1.0], [np.nan], [3.0], [5.0]])
  expected = [[2.0], [np.nan], [3.0]]
  fn = lambda d, i: getattr(cg, backend).xp.segment_min(d, i, 3)
  if compiled:  # pylint: disable=g-import-not-at-top
    if backend == "tensorflow":
      import tensorflow as tf
      fn = tf.function(fn, jit_compile=True)
    elif backend == "jax":
      import jax
      fn = jax.jit(fn)
    else:
      import torch
      fn = torch.compile(fn, fullgraph=True)
  for d in (data, data_2):
    got = fn(*(_as_backend(backend, [d, ids]) if backend != "numpy" else (d, ids)))
    np.testing.assert_array_equal(np.asarray(got), expected)


def _as_backend(backend, arrays):
  if backend == "numpy":
    return list(arrays)
  if backend == "torch":
    import torch  # pylint: disable=g-import-not-at-top
    return [torch.as_tensor(a) for a in arrays]
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return [tf.constant(a) for a in arrays]
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  return [jnp.asarray(a) for a in arrays]


@pytest.mark.parametrize("backend", BACKENDS)
def test_version_and_info(backend):
  xp = getattr(cg, backend).xp
  assert xp.__array_api_version__ == "2024.12"
  assert xp.__name__ == f"crossgrad.{backend}.xp"
  if "__array_namespace_info__" not in xp.missing:
    assert "float32" in xp.__array_namespace_info__().dtypes(kind="real floating")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", namespace.DTYPES)
def test_dtype_objects_equal_the_dtypes_of_arrays(backend, name):
  xp = getattr(cg, backend).xp
  import jax  # pylint: disable=g-import-not-at-top
  with jax.enable_x64(True):
    array = _as_backend(backend, [np.zeros(2, name)])[0] if backend != "numpy" else np.zeros(
        2, name)
    assert getattr(xp, name) == array.dtype
    assert xp.zeros_like(array).dtype == getattr(xp, name)
  others = [getattr(xp, other) for other in namespace.DTYPES if other != name]
  assert all(other != array.dtype for other in others)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_numpy_and_jax_offer_the_whole_standard_without_wrappers(backend):
  xp = getattr(cg, backend).xp
  assert xp.missing == () and xp.linalg.missing == ()
  assert set(dir(xp)) >= set(namespace.FUNCTIONS) | set(namespace.DTYPES) | {"linalg"}
  library = {"numpy": np}.get(backend) or __import__("jax.numpy").numpy
  # Copied at construction: the library's own functions, no crossgrad wrapper per call.
  assert xp.sum is library.sum and xp.linalg.slogdet is library.linalg.slogdet
  assert xp.pi == np.pi and xp.newaxis is None and np.isnan(xp.nan) and xp.inf == np.inf


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, standard", sorted(namespace.RENAMED.items())[:5] + [
    ("fft_shift", None), ("bfloat16", None)])
def test_names_outside_the_standard_are_a_clear_error(backend, name, standard):
  xp = getattr(cg, backend).xp
  with pytest.raises(cg.CrossgradError, match=rf"xp\.{name} is not in crossgrad's op namespace"
                     + (f"; the standard calls it {standard}" if standard else "")
                     + r".*data-apis\.org/array-api/2024\.12"):
    getattr(xp, name)
  assert not hasattr(xp, name)  # Also an AttributeError, as code for the standard expects.


def test_fft_is_optional():
  assert cg.numpy.xp.fft.rfftfreq(4).shape == (3,)
  bare = namespace.Namespace("numpy", np.linalg, extensions=dict.fromkeys(namespace.EXTENSIONS))
  with pytest.raises(cg.CrossgradError, match=r"xp\.fft \(optional in the standard\) is not "
                     "provided by this backend"):
    bare.fft  # pylint: disable=pointless-statement
  assert "sort" in bare.missing and not hasattr(bare, "fft")


def test_linalg_holds_only_the_standard_extension():
  with pytest.raises(cg.CrossgradError, match=r"xp\.linalg\.norm is not in crossgrad's op "
                     r"namespace.*linear_algebra_functions\.html"):
    cg.numpy.xp.linalg.norm  # pylint: disable=pointless-statement
  assert cg.numpy.xp.linalg.vector_norm(np.array([3.0, 4.0])) == 5.0


def test_take_keeps_the_standard_for_in_range_indices_and_reads_zero_outside():
  x = np.arange(12.0).reshape(3, 4)
  for backend in (*BACKENDS, "torch"):
    xp = getattr(cg, backend).xp
    array, scalar = _as_backend(backend, [x, np.array(1.0)]) if backend != "numpy" else [
        x, np.array(1.0)]
    np.testing.assert_array_equal(xp.take(array, np.array([2, 0]), axis=1), x[:, [2, 0]])
    np.testing.assert_array_equal(xp.take(array, np.array([-1, 3]), axis=0),
                                  [[0.0] * 4, [0.0] * 4])
    for no_axis in (array, scalar):  # Only a 1-D x may leave the axis out.
      with pytest.raises(cg.CrossgradError, match="needs an axis of x"):
        xp.take(no_axis, np.array([0]))
    with pytest.raises(TypeError):  # The axis is keyword-only, as in the standard.
      xp.take(array, np.array([0]), 1)  # pylint: disable=too-many-function-args


@pytest.mark.parametrize("backend", (*BACKENDS, "torch"))
def test_segment_ids_must_be_one_per_row_of_data(backend):
  xp = getattr(cg, backend).xp
  data, ok, matrix, short = _as_backend(backend, [
      np.ones((3, 2), np.float32), np.array([0, 1, 1]), np.array([[0, 1, 1]]),
      np.array([0, 1])])
  for name in ("segment_sum", "segment_min"):
    np.testing.assert_array_equal(getattr(xp, name)(data, ok, 2), [[1.0, 1.0], [1.0, 1.0]]
                                  if name == "segment_min" else [[1.0, 1.0], [2.0, 2.0]])
    for bad, shape in ((matrix, r"\(1, 3\)"), (short, r"\(2,\)")):
      with pytest.raises(cg.CrossgradError, match=rf"xp\.{name} reduces the rows of data .* "
                         rf"expected shape \(3,\) for data of shape \(3, 2\), got shape {shape}"):
        getattr(xp, name)(data, bad, 2)


@pytest.mark.parametrize("backend", (*BACKENDS, "torch"))
def test_one_hot_makes_every_dtype_bool_included(backend):
  xp = getattr(cg, backend).xp
  (labels,) = _as_backend(backend, [np.array([2, -1, 0])])
  for dtype in (xp.bool, xp.int32, xp.float32):
    got = xp.one_hot(labels, 3, dtype=dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(np.asarray(got), [[0, 0, 1], [0, 0, 0], [1, 0, 0]])


def test_extensions_must_match_the_documented_list():
  with pytest.raises(cg.CrossgradError, match=r"missing \['unbroadcast'\], extra \['gather'\]"):
    namespace.Namespace("numpy", np, extensions={
        **{n: None for n in namespace.EXTENSIONS if n != "unbroadcast"}, "gather": None})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erf_is_the_error_function(dtype):
  """NumPy's xp.erf (NumPy has none) against SciPy's, special values included."""
  from scipy import special  # pylint: disable=g-import-not-at-top
  x = np.concatenate([np.linspace(-6.0, 6.0, 97), [0.0, -0.0, np.inf, -np.inf, np.nan]])
  got = cg.numpy.xp.erf(x.astype(dtype))
  assert got.dtype == np.dtype(dtype)
  np.testing.assert_allclose(got, special.erf(x).astype(dtype), rtol=2e-7, atol=0)


def test_exact_gelu_with_erf_is_green_in_every_backend():
  """x (1 + erf(x / sqrt 2)) / 2 and its derivative Phi(x) + x phi(x): the check (finite
  differences, every backend eager and compiled) agrees."""
  def forward(xp, x):
    return 0.5 * x * (1.0 + xp.erf(x / math.sqrt(2.0))), (x,)

  def backward(xp, r, g):
    (x,) = r
    return (g * (0.5 * (1.0 + xp.erf(x / math.sqrt(2.0)))
                 + x * xp.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)),)

  op = cg.OpDef("t_gelu_erf", forward, backward,
                sample=lambda rng: (rng.standard_normal((3, 4)),))
  report = cg.cross_check([op], backends=["jax", "tensorflow", "torch"],
                          modes=["eager", "jit", "compile"], special=False, variants="none")
  assert report.ok, report.table(rows=report.failures)
  assert {r.mode for r in report.rows if r.check == "vjp"} == {"eager", "jit", "compile"}
