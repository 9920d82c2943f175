"""Built-in ops against the seeds' formulas, computed here independently, in every backend."""

import numpy as np
import pytest

import crossgrad as cg

RNG = np.random.default_rng(7)


def test_custom_add_is_the_seeds_override(backend_vjp):
  c, k, d, g = (RNG.standard_normal((4, 3)) for _ in range(4))
  out, (dc, dk, dd) = backend_vjp("custom_add", (c, k, d), g)
  np.testing.assert_allclose(out, c + k, rtol=1e-12)
  # Seeds 000/003: backprop_func returns (e + d) * grad, d * grad, e * grad with e = c + k.
  np.testing.assert_allclose(dc, (c + k + d) * g, rtol=1e-12)
  np.testing.assert_allclose(dk, d * g, rtol=1e-12)
  np.testing.assert_allclose(dd, (c + k) * g, rtol=1e-12)


def test_custom_add_matches_the_seed_network_gradient():
  """Seed 003's chain rule: dL/dc = (e + d) dL/da, dL/dk = d dL/da (slides' formulas)."""
  c, k, data = np.array([0.1, -0.2]), np.array([0.05, 0.3]), np.array([1.0, 2.0])
  d = data + c
  g = np.array([0.7, -1.1])  # dL/da
  _, vjp_fn = cg.numpy.vjp("custom_add", c, k, d)
  dc, dk, _ = vjp_fn(g)
  np.testing.assert_allclose(dc, ((c + k) + d) * g)
  np.testing.assert_allclose(dk, d * g)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ste_quantize_rounds_bit_exactly_half_to_even(backend_vjp, dtype):
  halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5], dtype)
  x = np.concatenate([halves, (RNG.standard_normal(993) * 50).astype(dtype)])
  g = RNG.standard_normal(x.shape).astype(dtype)
  out, (dx,) = backend_vjp("ste_quantize", (x,), g)
  assert out.dtype == dtype
  np.testing.assert_array_equal(out[:7], np.array([-2, -2, -0, 0, 2, 2, 4], dtype))
  np.testing.assert_array_equal(out, np.round(x))  # Bit-exact, not within a tolerance.
  np.testing.assert_array_equal(dx, g)  # Straight through.


def test_ste_quantize_bits_scale_and_clip(backend_vjp):
  x = np.array([-3.0, -2.1, -1.9, -0.13, 0.12, 1.70, 1.80, 2.6])
  g = np.arange(1.0, 9.0)
  out, (dx,) = backend_vjp("ste_quantize", (x,), g, bits=4, scale=0.25, clip=True)
  np.testing.assert_array_equal(out, np.clip(np.round(x / 0.25), -8, 7) * 0.25)
  inside = (x >= -8 * 0.25) & (x <= 7 * 0.25)
  np.testing.assert_array_equal(dx, np.where(inside, g, 0.0))
  _, (dx_unclipped,) = backend_vjp("ste_quantize", (x,), g, bits=4, scale=0.25)
  np.testing.assert_array_equal(dx_unclipped, g)


@pytest.mark.parametrize("params, fragment", [
    (dict(clip=True), "clip=True needs a range"),
    (dict(bits=1), "bits must be an integer >= 2"),
    (dict(scale=0.0), "scale must be a positive number"),
])
def test_ste_quantize_rejects_bad_parameters(backend_vjp, params, fragment):
  with pytest.raises(cg.CrossgradError, match=fragment) as info:
    backend_vjp("ste_quantize", (np.ones(3),), np.ones(3), **params)
  assert "op 'ste_quantize'" in str(info.value)


@pytest.mark.parametrize("alpha", [0.2, 0.01])
def test_leaky_relu_matches_its_derivative(backend_vjp, alpha):
  x = np.array([-2.0, -0.5, 0.25, 3.0])
  g = np.array([1.0, -2.0, 3.0, -4.0])
  params = {} if alpha == 0.2 else {"alpha": alpha}
  out, (dx,) = backend_vjp("leaky_relu", (x,), g, **params)
  np.testing.assert_allclose(out, [-2.0 * alpha, -0.5 * alpha, 0.25, 3.0])
  np.testing.assert_allclose(dx, [alpha, -2.0 * alpha, 3.0, -4.0])


def test_custom_add_rejects_mismatched_inputs(backend_vjp):
  with pytest.raises(cg.CrossgradError) as info:
    backend_vjp("custom_add", (np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 3))), np.ones((2, 3)))
  message = str(info.value)
  assert "op 'custom_add'" in message and "input 'k'" in message
  assert "expected float64[2, 3], got float64[2, 4]" in message
