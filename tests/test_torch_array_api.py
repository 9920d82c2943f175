"""crossgrad.torch.xp's fixes to array_api_compat (backends/torch/namespace.py): NumPy's values
eagerly, under torch.compile(fullgraph=True) and under torch.func.vmap."""

import math

import numpy as np
import pytest
import torch

import crossgrad as cg

xp = cg.torch.xp
nxp = cg.numpy.xp


def _modes(fn):
  """fn eagerly, compiled without graph breaks, and vmapped over a leading axis of 2."""
  torch._dynamo.reset()  # pylint: disable=protected-access
  compiled = torch.compile(fn, fullgraph=True)

  def vmapped(*args):  # Each argument stacked twice; both results must be fn's.
    out = torch.func.vmap(fn)(*(torch.stack([a, a]) for a in args))
    assert torch.equal(out[0], out[1]) or torch.allclose(out[0], out[1], equal_nan=True)
    return out[0]

  return {"eager": fn, "compile": compiled, "vmap": vmapped}


X = np.array([-2.5, -0.0, 0.0, 0.5, 3.0, math.nan, math.inf, -math.inf])


SCALAR_FUNCTIONS = ["maximum", "minimum", "logaddexp", "atan2", "hypot", "nextafter",
                    "copysign", "less", "equal", "add", "pow"]


def _with_a_python_scalar(ns, name, scalar_first, x):
  return getattr(ns, name)(0.5, x) if scalar_first else getattr(ns, name)(x, 0.5)


def _scalar_values(name):
  # pow(-inf, 0.5) is +inf in the standard and torch, NaN in NumPy: left out.
  return X[:-1] if name == "pow" else X


@pytest.fixture(scope="module")
def compiled_with_a_python_scalar():
  """``{(name, scalar_first): output}`` of every case of test_binary_with_a_python_scalar
  under torch.compile (float32), all compiled as one graph: one compilation, not one per
  case; each output is its own case's call."""
  cases = [(name, first) for name in SCALAR_FUNCTIONS for first in (False, True)]

  def every_case(x, x_pow):
    return [_with_a_python_scalar(xp, name, first, x_pow if name == "pow" else x)
            for name, first in cases]

  outs = _modes(every_case)["compile"](torch.from_numpy(X.astype(np.float32)),
                                       torch.from_numpy(_scalar_values("pow").astype(np.float32)))
  return dict(zip(cases, outs))


@pytest.mark.parametrize("mode", ["eager", "compile", "vmap"])
@pytest.mark.parametrize("name", SCALAR_FUNCTIONS)
@pytest.mark.parametrize("scalar_first", [False, True])
def test_binary_with_a_python_scalar(name, mode, scalar_first, request):
  def call(ns, x):
    return _with_a_python_scalar(ns, name, scalar_first, x)

  values = _scalar_values(name)
  for dtype in (np.float32, np.float64) if mode == "eager" else (np.float32,):
    x = values.astype(dtype)
    if mode == "compile":  # The module's one graph of every case (float32).
      out = request.getfixturevalue("compiled_with_a_python_scalar")[name, scalar_first]
    else:
      out = _modes(lambda t: call(xp, t))[mode](torch.from_numpy(x))
    with np.errstate(invalid="ignore"):
      expected = call(nxp, x)
    assert out.dtype == getattr(xp, expected.dtype.name)  # The array's dtype, as NumPy's.
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_result_type_follows_the_python_scalar_rules():
  f32, i8 = torch.zeros(2, dtype=torch.float32), torch.zeros(2, dtype=torch.int8)
  cases = [((f32, 1.0), torch.float32), ((i8, 3), torch.int8), ((f32, 1j), torch.complex64),
           ((i8, 1.5), torch.get_default_dtype()), ((i8, torch.uint8), torch.int16),
           ((xp.float64, f32, 2), torch.float64), ((torch.zeros(2, dtype=torch.bool), 1),
                                                   torch.int64)]
  for args, expected in cases:
    assert xp.result_type(*args) == expected, args
  compiled = torch.compile(lambda x: x.to(xp.result_type(x, 2.0)), fullgraph=True)
  assert compiled(i8).dtype == torch.get_default_dtype()
  with pytest.raises(ValueError):
    xp.result_type(1.0, 2)


@pytest.mark.parametrize("mode", ["eager", "compile", "vmap"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex64])
def test_sign(mode, dtype):
  x = X.astype(dtype) if dtype != np.int32 else np.array([-3, 0, 4], np.int32)
  if dtype == np.complex64:
    x = np.array([0, 3 - 4j, -1j, complex(0, -0.0)], np.complex64)
  out = _modes(xp.sign)[mode](torch.from_numpy(x))
  np.testing.assert_allclose(out.numpy(), nxp.sign(x), rtol=1e-6)
  assert out.dtype == torch.from_numpy(x).dtype


def test_sign_recorded_by_autograd_keeps_its_values_and_a_zero_gradient():
  """Eagerly the NaN rule writes over the fresh sign; where autograd records the sign it
  does not (an in-place write there would break the graph), with the same values, and
  the gradient is sign's own: zero."""
  values = [math.nan, -0.0, 0.0, 2.0, -3.0]
  x = torch.tensor(values, requires_grad=True)
  out = xp.sign(x)
  assert out.requires_grad
  out.sum().backward()
  expected = np.array([math.nan, 0.0, 0.0, 1.0, -1.0], np.float32)
  np.testing.assert_array_equal(out.detach().numpy(), expected)
  np.testing.assert_array_equal(xp.sign(torch.tensor(values)).numpy(), expected)
  np.testing.assert_array_equal(x.grad.numpy(), np.zeros(5, np.float32))


@pytest.mark.parametrize("mode", ["eager", "compile", "vmap"])
@pytest.mark.parametrize("index_dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_indices_of_any_integer_dtype(mode, index_dtype):
  rng = np.random.default_rng(0)
  x = rng.standard_normal((3, 4)).astype(np.float32)
  idx = np.array([[0, 3], [1, 1], [2, 0]], index_dtype)
  sorted_row, sorter = np.array([3.0, 1.0, 2.0]), np.array([1, 2, 0], index_dtype)
  repeats = np.array([2, 0, 1], index_dtype)
  cases = [
      (lambda ns, a, i: ns.take_along_axis(a, i, axis=1), (x, idx)),
      (lambda ns, a, i: ns.searchsorted(a, ns.asarray([1.5, 2.5], dtype=a.dtype),
                                        sorter=i), (sorted_row, sorter)),
  ]
  if mode == "eager":  # A repeated shape depends on the data: eager only.
    cases.append((lambda ns, a, r: ns.repeat(a, r, axis=0), (x, repeats)))
  if mode == "compile":  # Both cases in one graph: one compilation per index dtype.
    def both(*flat):
      return [fn(xp, *flat[2 * k:2 * k + 2]) for k, (fn, _) in enumerate(cases)]
    outs = _modes(both)[mode](*(torch.from_numpy(a) for _, args in cases for a in args))
  else:
    outs = [_modes(lambda *t, fn=fn: fn(xp, *t))[mode](*map(torch.from_numpy, args))
            for fn, args in cases]
  assert len(outs) == len(cases)
  for (fn, args), out in zip(cases, outs):
    np.testing.assert_array_equal(out.numpy(), fn(nxp, *args))


@pytest.mark.parametrize("mode", ["eager", "compile", "vmap"])
def test_remainder_zero_has_the_divisor_sign(mode):
  x1 = np.array([-0.0, 0.0, 4.0, -4.0, 5.0, -5.5])
  x2 = np.array([5.0, -5.0, -2.0, 2.0, 3.0, 2.0])
  out = _modes(xp.remainder)[mode](torch.from_numpy(x1), torch.from_numpy(x2))
  np.testing.assert_array_equal(np.signbit(out.numpy()), np.signbit(np.remainder(x1, x2)))
  np.testing.assert_array_equal(out.numpy(), np.remainder(x1, x2))
  assert np.signbit(xp.remainder(torch.tensor([-0.0]), 2.0).numpy()[0]) == np.signbit(
      np.remainder(-0.0, 2.0))


@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_squeeze_asarray_and_fractional_correction(mode):
  x = np.random.default_rng(0).standard_normal((1, 3, 1))
  t = torch.from_numpy(x)
  moments = [(name, correction) for correction in (0.5, 1) for name in ("var", "std")]
  calls = [lambda a: xp.squeeze(a, axis=(0, -1)),
           lambda a: xp.asarray([[a[0, 0, 0], a[0, 1, 0]]], dtype=xp.float32)] + [
               lambda a, n=name, c=correction: getattr(xp, n)(a, axis=1, correction=c)
               for name, correction in moments]
  if mode == "compile":  # Every call in one graph: one compilation.
    squeezed, listed, *by_moment = _modes(lambda a: [f(a) for f in calls])[mode](t)
  else:
    squeezed, listed, *by_moment = [_modes(f)[mode](t) for f in calls]
  np.testing.assert_array_equal(squeezed.numpy(), np.squeeze(x, axis=(0, -1)))
  np.testing.assert_allclose(listed.numpy(), [[x[0, 0, 0], x[0, 1, 0]]], rtol=1e-6)
  assert len(by_moment) == len(moments)
  for (name, correction), out in zip(moments, by_moment):
    np.testing.assert_allclose(out.numpy(), getattr(np, name)(x, axis=1, ddof=correction),
                               rtol=1e-12)
  assert xp.var(t, axis=(), correction=0.5).shape == t.shape  # No axis reduced.
  with pytest.raises(ValueError, match="equal to 1"):
    xp.squeeze(t, axis=1)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_unsigned_sums_give_uint64(dtype):
  """The standard (and NumPy): uint64; torch gives int64 and has no uint16/32/64 kernels."""
  x = np.array([[200, 100, 7], [3, 255, 2]], dtype)
  t = torch.from_numpy(x.astype(np.int64)).to(getattr(torch, np.dtype(dtype).name))
  for name in ("sum", "prod", "cumulative_prod"):
    out, expected = getattr(xp, name)(t, axis=1), getattr(nxp, name)(x, axis=1)
    assert out.dtype == torch.uint64, name
    np.testing.assert_array_equal(out.to(torch.int64).numpy().astype(np.uint64), expected)
  assert [type(f(torch.ones(2), torch.ones(2))) for f in (xp.meshgrid, xp.broadcast_arrays)
          ] == [list, list]


@pytest.mark.parametrize("mode", ["eager", "compile", "vmap"])
def test_floor_divide_with_infinities(mode):
  """The standard's values (NumPy's own gives NaN for the first four)."""
  x1 = np.array([math.inf, math.inf, -math.inf, 3.0, -3.0, 3.0, 7.5, -7.5])
  x2 = np.array([2.0, -2.0, 2.0, -math.inf, math.inf, math.inf, 2.0, 2.0])
  expected = np.array([math.inf, -math.inf, -math.inf, -0.0, -0.0, 0.0, 3.0, -4.0])
  out = _modes(xp.floor_divide)[mode](torch.from_numpy(x1), torch.from_numpy(x2)).numpy()
  np.testing.assert_array_equal(out, expected)
  np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))




def test_floor_divide_has_zero_derivatives_and_remainder_its_own():
  """floor_divide is piecewise constant: zero gradients (torch implements no derivative for
  it, so differentiating through it raised), as JAX and TensorFlow; remainder's are 1 and
  -floor(x1 / x2). Expected: the formulas, away from the jumps."""
  x1 = torch.tensor([-7.3, 7.3, 1.2], dtype=torch.float64, requires_grad=True)
  x2 = torch.tensor([2.0, -2.0, 0.5], dtype=torch.float64, requires_grad=True)
  floor = np.floor(x1.detach().numpy() / x2.detach().numpy())
  assert not xp.floor_divide(x1, x2).requires_grad  # A constant to autograd.
  for remainder in (lambda a, b: a - xp.floor_divide(a, b) * b, xp.remainder):
    g1, g2 = torch.autograd.grad(remainder(x1, x2).sum(), [x1, x2])
    np.testing.assert_array_equal(g1.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(g2.numpy(), -floor)
@pytest.mark.parametrize("mode", ["eager", "vmap"])
def test_complex_special_values(mode):
  """The standard's special cases (C99), where torch's kernels give NaN or +0j."""
  inf, nan = math.inf, math.nan
  cases = {
      "expm1": [(complex(inf, 0.0), complex(inf, 0.0)), (complex(-inf, inf), complex(-1.0, 0.0)),
                (complex(-inf, nan), complex(-1.0, 0.0)), (complex(nan, 0.0), complex(nan, 0.0)),
                (complex(inf, nan), complex(inf, nan)), (1e-10 + 0j, math.expm1(1e-10) + 0j),
                (complex(-0.0, 0.0), 0j)],
      "log1p": [(complex(inf, nan), complex(inf, nan)), (complex(nan, inf), complex(inf, nan)),
                (complex(-inf, 1.0), complex(inf, math.pi)), (1e-10 + 0j, math.log1p(1e-10) + 0j)],
      "acos": [(0j, complex(math.pi / 2, -0.0)), (complex(-0.0, -0.0), complex(math.pi / 2, 0.0))],
      "tanh": [(complex(inf, 2.0), 1 + 0j), (complex(-inf, -2.0), complex(-1.0, -0.0)),
               (complex(inf, 1.0), 1 + 0j)],
  }
  for name, pairs in cases.items():
    z = torch.tensor([p[0] for p in pairs], dtype=torch.complex128)
    got = _modes(getattr(xp, name))[mode](z).numpy()
    for g, (_, w) in zip(got, pairs):
      for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
        assert (math.isnan(gp) and math.isnan(wp)) or (
            gp == wp and math.copysign(1, gp) == math.copysign(1, wp)), (name, g, w)


@pytest.mark.parametrize("mode", ["eager", "compile", "vmap"])
def test_matmul_of_one_dtype_and_of_mixed_dtypes(mode):
  """One dtype goes to torch.matmul directly; mixed dtypes promote by the standard's table
  (float32 with float64 is float64; torch.matmul alone raises)."""
  x, y = np.arange(6.0).reshape(2, 3) - 2.5, np.arange(12.0).reshape(3, 4) / 7
  pairs = [(x.astype(dx), y.astype(dy) if dy.startswith("float") else (y * 7).astype(dy))
           for dx, dy in (("float32", "float32"), ("float64", "float64"),
                          ("float32", "float64"), ("float64", "float32"), ("int32", "int32"),
                          ("int32", "int64"))]
  tensors = [torch.from_numpy(v) for pair in pairs for v in pair]
  if mode == "compile":  # Every pair in one graph: one compilation.
    outs = _modes(lambda *t: [xp.matmul(a, b) for a, b in zip(t[::2], t[1::2])])[mode](
        *tensors)
  else:
    outs = [_modes(xp.matmul)[mode](a, b) for a, b in zip(tensors[::2], tensors[1::2])]
  assert len(outs) == len(pairs)
  for (a, b), out in zip(pairs, outs):
    dx, dy = a.dtype.name, b.dtype.name
    expected = nxp.matmul(a, b)
    assert out.dtype == getattr(torch, expected.dtype.name), (dx, dy)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_integer_products_of_any_integer_dtypes():
  """torch has no uint16/32/64 matmul kernels and no promotion of uint64 with uint8."""
  a = np.array([[3, 250], [7, 1]], np.uint64)
  b = np.array([[2, 9], [4, 200]], np.uint8)
  for x, y in ((a, b), (a.astype(np.uint16), a.astype(np.uint16)), (b, b.astype(np.int16))):
    tx, ty = (torch.from_numpy(v.astype(np.int64)).to(getattr(torch, v.dtype.name))
              for v in (x, y))
    for name, kwargs in (("matmul", {}), ("vecdot", {}), ("tensordot", {"axes": 1})):
      out, expected = getattr(xp, name)(tx, ty, **kwargs), getattr(nxp, name)(x, y, **kwargs)
      assert out.dtype == getattr(torch, expected.dtype.name), (name, x.dtype, y.dtype)
      np.testing.assert_array_equal(out.to(torch.int64).numpy(), expected.astype(np.int64))


_INTEGER_ONLY = ("bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
                 "bitwise_xor")
_BOOL_ONLY = ("logical_and", "logical_or", "logical_xor")


def _operands(name):
  """Pairs for ``name``: one dtype (1-D with 1-D, and with 0-D either side: torch lets a 0-D
  tensor take the other's dtype, array_api_compat undoes that), then two dtypes (but for
  bool, which the standard promotes with nothing)."""
  if name in _BOOL_ONLY:
    a, b = torch.tensor([True, False, True]), torch.tensor([True, True, False])
    return [(a, b), (a, b[1]), (a[0], b)]
  if name in _INTEGER_ONLY:
    a, b = torch.tensor([5, -3, 12], dtype=torch.int32), torch.tensor([1, 2, 3], dtype=torch.int32)
  else:
    a, b = torch.tensor([-2.5, 0.5, 3.0, math.nan]), torch.tensor([1.5, -0.0, 2.0, 4.0])
  other = torch.int64 if name in _INTEGER_ONLY else torch.float64
  return [(a, b), (a, b[1]), (a[0], b), (a, b.to(other)), (a[0].to(other), b)]


@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_where_with_a_python_scalar_matches_array_api_compat(mode):
  """A float or int on either side of a floating or complex tensor skips array_api_compat
  too: its values and dtype; an integer tensor with a scalar stays with array_api_compat."""
  import array_api_compat.torch as compat  # pylint: disable=g-import-not-at-top
  keep = torch.tensor([True, False, True, False])
  tensors = [torch.tensor([-2.5, 0.5, math.nan, 7.0], dtype=dtype) for dtype in (
      torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64)]
  tensors.append(torch.tensor([5, -3, 12, 0], dtype=torch.int16))
  scalars = (0.0, -0.0, 2.5, 1e10, 0, -3, 70000)
  cases = [(t, s, left) for t in range(len(tensors)) for s in scalars for left in (0, 1)
           if tensors[t].dtype != torch.int16 or type(s) is int and abs(s) < 2 ** 15]

  def calls(f, *ts):
    return [f.where(keep, s, ts[t]) if left else f.where(keep, ts[t], s)
            for t, s, left in cases]

  got = _modes(lambda *ts: calls(xp, *ts))[mode](*tensors)
  for case, out, want in zip(cases, got, calls(compat, *tensors)):
    assert out.dtype == want.dtype, case
    torch.testing.assert_close(out, want, equal_nan=True, rtol=0, atol=0, msg=str(case))


@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_binary_functions_and_where_match_array_api_compat(mode):
  """Two tensors of one dtype skip array_api_compat's promotion fix (a no-op there): every
  binary function and ``where`` gives array_api_compat's values and dtype, for one dtype
  and for two."""
  import array_api_compat.torch as compat  # pylint: disable=g-import-not-at-top
  from crossgrad.backends.torch import namespace as torch_array_api  # pylint: disable=g-import-not-at-top
  keep = torch.tensor([True, False, True, False])
  cases = [(name, a, b) for name in torch_array_api.BINARY for a, b in _operands(name)]
  cases += [("where", a, b) for a, b in _operands("where")]

  def call(f, name, a, b):
    return f.where(keep, a, b) if name == "where" else getattr(f, name)(a, b)

  def ours(*flat):
    return [call(xp, name, a, b) for (name, _, _), a, b in zip(cases, flat[::2], flat[1::2])]

  got = _modes(ours)[mode](*[t for _, a, b in cases for t in (a, b)])
  for (name, a, b), out in zip(cases, got):
    want = call(compat, name, a, b)
    assert out.dtype == want.dtype, (name, a, b)
    torch.testing.assert_close(out, want, equal_nan=True, rtol=0, atol=0, msg=name)
