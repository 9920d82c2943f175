"""crossgrad.jax.xp's fixes to jax.numpy (backends/jax/namespace.py): the standard's values,
and real-dtype computations left exactly as jax.numpy compiles them."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.jax import namespace as jax_array_api

xp = cg.jax.xp
INF, NAN, PI = math.inf, math.nan, math.pi


def test_expand_dims_axis_out_of_range_raises_index_error():
  x = xp.zeros((1, 2, 3))
  for axis in (4, -5):
    with pytest.raises(IndexError):
      xp.expand_dims(x, axis=axis)
  assert xp.expand_dims(x, axis=3).shape == (1, 2, 3, 1)
  assert xp.expand_dims(x, axis=-4).shape == (1, 1, 2, 3)


def test_permute_dims_takes_negative_axes():
  x = np.arange(24.0).reshape(2, 3, 4)
  np.testing.assert_array_equal(xp.permute_dims(jnp.asarray(x), (-1, 0, -2)),
                                np.transpose(x, (2, 0, 1)))
  assert xp.permute_dims(xp.zeros((0,)), (-1,)).shape == (0,)


@pytest.mark.parametrize("x64, default_int", [(True, "int64"), (False, "int32")])
def test_searchsorted_gives_the_default_integer(x64, default_int):
  with jax.enable_x64(x64):
    x1, x2 = xp.asarray([1, 2, 3], dtype=xp.uint8), xp.asarray([2], dtype=xp.uint8)
    left, right = xp.searchsorted(x1, x2), xp.searchsorted(x1, x2, side="right")
    assert (left.dtype.name, right.dtype.name) == (default_int, default_int)
    assert (int(left[0]), int(right[0])) == (1, 2)


def test_cumulative_prod_accumulates_small_integers_in_the_default_integer():
  with jax.enable_x64(True):
    products = xp.cumulative_prod(xp.asarray([2, 3, 50], dtype=xp.uint8))
    assert products.dtype == xp.uint64
    assert [int(v) for v in products] == [2, 6, 300]  # 300 does not fit a uint8.
    assert xp.cumulative_prod(xp.asarray([-2, 3], dtype=xp.int8)).dtype == xp.int64
    assert xp.cumulative_prod(xp.asarray([2, 3], dtype=xp.uint8), dtype=xp.uint8).dtype == (
        xp.uint8)
    assert xp.cumulative_prod(xp.asarray([2.0], dtype=xp.float32)).dtype == xp.float32


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_finfo_gives_python_numbers(backend):
  ns = getattr(cg, backend).xp
  for arg in (ns.float32, ns.complex64, ns.asarray(1.0, dtype=ns.complex64)):
    info = ns.finfo(arg)
    assert type(info.bits) is int and info.bits == 32
    assert all(type(v) is float for v in (info.eps, info.max, info.min, info.smallest_normal))
    # IEEE 754 binary32: eps 2**-23, largest (2 - 2**-23) * 2**127, smallest normal 2**-126.
    assert (info.eps, info.smallest_normal) == (2.0**-23, 2.0**-126)
    assert info.max == -info.min == (2 - 2.0**-23) * 2.0**127
    assert info.dtype == ns.float32


# (function, a, b, real, imaginary): the standard's complex special cases (2024.12), a few
# carried to negative parts by f(conj(z)) == conj(f(z)) and, for odd f, f(-z) == -f(z). A
# None component is unspecified (sign unspecified: compared without its sign, as abs).
SPECIAL = [
    ("acos", 0.0, NAN, PI / 2, NAN), ("acos", -0.0, NAN, PI / 2, NAN),
    ("acos", 1.5, NAN, NAN, NAN), ("acosh", 0.0, NAN, NAN, PI / 2),
    ("asinh", NAN, 0.0, NAN, 0.0), ("asinh", NAN, -0.0, NAN, -0.0),
    ("atanh", 0.0, NAN, 0.0, NAN), ("atanh", -0.0, NAN, -0.0, NAN),
    ("atanh", 0.5, NAN, NAN, NAN), ("atanh", INF, NAN, 0.0, NAN), ("atanh", -INF, NAN, -0.0, NAN),
    ("atanh", NAN, 2.0, NAN, NAN), ("atanh", NAN, NAN, NAN, NAN),
    ("cosh", 0.0, INF, NAN, None), ("cosh", 0.0, NAN, NAN, None),
    ("cosh", INF, INF, None, NAN), ("cosh", INF, NAN, INF, NAN),
    ("sinh", 0.0, INF, None, NAN), ("sinh", 0.0, NAN, None, NAN),
    ("sinh", INF, INF, None, NAN), ("sinh", INF, NAN, None, NAN), ("sinh", -INF, NAN, None, NAN),
    ("tanh", 0.0, INF, 0.0, NAN), ("tanh", 0.0, NAN, 0.0, NAN), ("tanh", -0.0, -INF, -0.0, NAN),
    ("tanh", INF, 2.0, 1.0, 0.0), ("tanh", INF, 0.0, 1.0, 0.0), ("tanh", -INF, -2.0, -1.0, -0.0),
    ("exp", -INF, INF, None, None), ("exp", INF, INF, None, NAN), ("exp", -INF, NAN, None, None),
    ("exp", INF, NAN, None, NAN), ("exp", -INF, -INF, None, None),
    ("expm1", -INF, INF, -1.0, None), ("expm1", INF, INF, None, NAN),
    ("expm1", -INF, NAN, -1.0, None), ("expm1", INF, NAN, None, NAN),
    ("log", INF, NAN, INF, NAN), ("log", -INF, NAN, INF, NAN), ("log", NAN, INF, INF, NAN),
    ("log", NAN, -INF, INF, NAN), ("log1p", INF, NAN, INF, NAN), ("log1p", -INF, NAN, INF, NAN),
    ("log1p", NAN, INF, INF, NAN), ("sqrt", -INF, NAN, NAN, None), ("sqrt", INF, NAN, INF, NAN),
    ("sign", 0.0, 0.0, 0.0, 0.0), ("sign", -0.0, 0.0, 0.0, 0.0), ("sign", 0.0, -0.0, 0.0, 0.0),
    ("sign", -0.0, -0.0, 0.0, 0.0),
]
# Where the unspecified sign's magnitude is known: exp/expm1 at -inf are (+-)0, at +inf +-inf.
MAGNITUDE = {("exp", -INF): (0.0, 0.0), ("exp", INF): (INF, None), ("expm1", -INF): (1.0, 0.0),
             ("expm1", INF): (INF, None), ("cosh", 0.0): (None, 0.0), ("cosh", INF): (INF, None),
             ("sinh", 0.0): (0.0, None), ("sinh", INF): (INF, None), ("sinh", -INF): (INF, None),
             ("sqrt", -INF): (None, INF)}


def _same(actual: float, expected: float | None, magnitude: float | None, dtype) -> bool:
  """Equal to ``expected`` rounded to ``dtype``, signs of zeros included; NaN to NaN."""
  if expected is None:
    return magnitude is None or abs(actual) == magnitude
  if math.isnan(expected):
    return math.isnan(actual)
  expected = float(np.asarray(expected, dtype))
  return actual == expected and math.copysign(1, actual) == math.copysign(1, expected)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name, a, b, real, imag", SPECIAL)
def test_complex_special_cases_follow_the_standard(name, a, b, real, imag, dtype):
  part = {"complex64": np.float32, "complex128": np.float64}[dtype]
  with jax.enable_x64(True):
    z = jax.lax.complex(jnp.asarray(a, dtype=part), jnp.asarray(b, dtype=part))
    for f in (getattr(xp, name), jax.jit(getattr(xp, name))):
      out = complex(f(z))
      magnitude = MAGNITUDE.get((name, a), (None, None))
      assert _same(out.real, real, magnitude[0], part) and _same(
          out.imag, imag, magnitude[1], part), (
          f"{name}({complex(a, b)}) = {out}, the standard says {real} + {imag}j")


@pytest.mark.parametrize("name", sorted(set(jax_array_api.FIXES) - {
    "finfo", "floor_divide", "remainder"}))
def test_complex_values_elsewhere_are_jax_numpys(name):
  z = jnp.asarray([0.3 + 0.4j, -1.5 + 2.0j, 2.0 - 0.5j, -0.25 - 3.0j], dtype=jnp.complex64)
  args = {"expand_dims": (z, 0), "permute_dims": (z, (0,)),
          "searchsorted": (jnp.sort(z.real), z.real)}.get(name, (z,))
  np.testing.assert_array_equal(getattr(xp, name)(*args),
                                getattr(jnp, name)(*args), err_msg=name)


# (x1, x2, floor_divide, remainder): the standard's special cases for real floats.
DIVISION = [(-0.0, 2.0, -0.0, 0.0), (-0.0, -2.0, 0.0, -0.0), (0.0, -2.0, -0.0, -0.0),
            (INF, 2.0, INF, NAN), (INF, -2.0, -INF, NAN), (-INF, 2.0, -INF, NAN),
            (-INF, -2.0, INF, NAN), (3.0, INF, 0.0, 3.0), (3.0, -INF, -0.0, -INF),
            (-3.0, INF, -0.0, INF), (-3.0, -INF, 0.0, -3.0), (3.0, 0.0, INF, NAN),
            (3.0, -0.0, -INF, NAN), (0.0, 0.0, NAN, NAN), (INF, -INF, NAN, NAN),
            (-4.0, 2.0, -2.0, 0.0), (4.0, -2.0, -2.0, -0.0), (-7.0, 2.0, -4.0, 1.0)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x1, x2, quotient, remainder", DIVISION)
def test_floor_divide_and_remainder_special_cases(x1, x2, quotient, remainder, dtype):
  with jax.enable_x64(True):
    a, b = jnp.asarray(x1, dtype=dtype), jnp.asarray(x2, dtype=dtype)
    assert _same(float(xp.floor_divide(a, b)), quotient, None, dtype)
    assert _same(float(jax.jit(xp.remainder)(a, b)), remainder, None, dtype)
  np.testing.assert_array_equal(xp.floor_divide(jnp.arange(-3, 4), 2), [-2, -1, -1, 0, 0, 1, 1])
  np.testing.assert_array_equal(xp.remainder(jnp.arange(-3, 4), 2), [1, 0, 1, 0, 1, 0, 1])


@pytest.mark.parametrize("dtype, x64", [("float32", False), ("float64", True)])
@pytest.mark.parametrize("name", ["acos", "acosh", "asinh", "atanh", "cosh", "sinh", "tanh",
                                  "exp", "expm1", "log", "log1p", "sqrt", "sign",
                                  "cumulative_prod"])
def test_real_floats_compile_as_jax_numpy(name, dtype, x64):
  with jax.enable_x64(x64):
    x = jnp.linspace(1.25, 2.5, 7, dtype=dtype)
    ours = jax.jit(getattr(xp, name)).lower(x).as_text()
    theirs = jax.jit(getattr(jnp, name)).lower(x).as_text()
    assert ours.replace(f"jit_{name}", "jit_") == theirs.replace(
        f"jit_{getattr(jnp, name).__name__}", "jit_")
