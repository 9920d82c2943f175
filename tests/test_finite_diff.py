"""Finite-difference checks: exact on known Jacobians, sensitive to small errors at 1M elements."""

import numpy as np

from crossgrad.checker import finite_diff

RNG = np.random.default_rng(3)


def _leaky(inputs):
  (x,) = inputs
  return [np.where(x > 0, x, 0.2 * x)]


def _leaky_vjp(scale=1.0):
  def vjp(inputs, cotangents):
    (x,), (c,) = inputs, cotangents
    return [np.where(x > 0, c, 0.2 * c) * scale]
  return vjp


def _off_kink(n):
  z = RNG.standard_normal(n)
  return z + 0.05 * np.sign(z)


def test_full_jacobian_of_a_matrix_product():
  w = RNG.standard_normal((3, 4))
  f = lambda inputs: [w @ inputs[0]]
  vjp = lambda inputs, c: [w.T @ c[0]]
  assert finite_diff.full_jacobian_error(f, vjp, [RNG.standard_normal(4)]) < 1e-9
  wrong = lambda inputs, c: [w.T @ c[0] + 1e-4]
  assert finite_diff.full_jacobian_error(f, wrong, [RNG.standard_normal(4)]) > 1e-5


def test_directional_check_at_a_million_elements():
  x = [_off_kink(1_000_000)]
  assert finite_diff.directional_error(_leaky, _leaky_vjp(), x, RNG) < 1e-8
  # A backward 0.1% too large is far above the tolerance.
  error = finite_diff.directional_error(_leaky, _leaky_vjp(1.001), x, RNG)
  assert error > 100 * finite_diff.TOLERANCE


def test_vjp_error_picks_the_method_by_size():
  _, how = finite_diff.vjp_error(_leaky, _leaky_vjp(), [_off_kink(10)], RNG)
  assert how == "full Jacobian 10x10"
  _, how = finite_diff.vjp_error(_leaky, _leaky_vjp(), [_off_kink(1000)], RNG)
  assert how == "directional, 1000 inputs"
