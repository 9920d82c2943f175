"""Finite-difference checks: exact on known Jacobians, sensitive to small errors at 1M elements,
blind to no backward that is not linear in the cotangent (the reference's fd row alone)."""

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.checker import engine, finite_diff
from crossgrad.checker.diagnosis import causes
from crossgrad.checker.diagnosis.kinds import Kind

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
  how = finite_diff.vjp_error(_leaky, _leaky_vjp(), [_off_kink(10)], RNG).how
  assert how == "full Jacobian 10x10"
  how = finite_diff.vjp_error(_leaky, _leaky_vjp(), [_off_kink(1000)], RNG).how
  assert how == "directional, 1000 inputs"


def _sin(inputs):
  return [np.sin(inputs[0])]


def _sin_vjp(cotangent_of):
  """The VJP of sin whose backward multiplies cos(x) by ``cotangent_of(c)`` (c, for the
  right one)."""
  return lambda inputs, c: [cotangent_of(c[0]) * np.cos(inputs[0])]


SIN_BACKWARDS = {"right": lambda c: c, "g_squared": lambda c: c * c,
                 "g_abs_g": lambda c: c * np.abs(c), "ignores_g": np.ones_like}


@pytest.mark.parametrize("name, n, finding", [
    ("right", 12, ""), ("g_squared", 12, finite_diff.NOT_LINEAR),
    ("g_abs_g", 12, finite_diff.NOT_LINEAR), ("ignores_g", 1, finite_diff.IGNORES_G)])
def test_a_backward_not_linear_in_g_fails_though_unit_cotangents_agree(name, n, finding):
  x = [RNG.standard_normal(n)]
  vjp = _sin_vjp(SIN_BACKWARDS[name])
  for i in range(n):  # What unit cotangents see: each planted backward is right there.
    unit = np.eye(n)[i]
    np.testing.assert_allclose(vjp(x, [unit])[0], unit * np.cos(x[0]), rtol=0, atol=1e-15)
  error, how, found = finite_diff.vjp_error(_sin, vjp, x, RNG)
  assert (how, found) == (f"full Jacobian {n}x{n}", finding)
  assert (error <= finite_diff.TOLERANCE) == (name == "right")
  if name != "right":  # |c^2 - c| cos(x), |c|c - c ... for a uniform c: far above 1e-6.
    assert error > 1e-3


def test_a_nan_backward_fails_without_a_linearity_claim():
  x = [RNG.standard_normal(4)]
  error, _, found = finite_diff.vjp_error(_sin, _sin_vjp(lambda c: c * np.nan), x, RNG)
  assert np.isnan(error) and found == ""


def _op(name, backward_fn, sample, **kwargs):
  return cg.OpDef(f"t_fd_{name}", lambda xp, x: (xp.sin(x), (x,)), backward_fn,
                  sample=sample, **kwargs)


def _loss_op(name, backward_fn):
  """sum(sin(x)): one output, so its only unit cotangent is 1."""
  return cg.OpDef(f"t_fd_{name}", lambda xp, x: (xp.sum(xp.sin(x)), (x,)), backward_fn,
                  sample=lambda rng: (rng.standard_normal(3),))


GRID = lambda rng: (rng.standard_normal((3, 4)),)
ROW_CASES = [
    ("right", _op("right", lambda xp, r, g: (g * xp.cos(r[0]),), GRID), None),
    ("g_squared", _op("g_squared", lambda xp, r, g: (g * g * xp.cos(r[0]),), GRID),
     Kind.NOT_LINEAR_IN_COTANGENT),
    ("ignores_g", _loss_op("ignores_g", lambda xp, r, g: (xp.cos(r[0]),)),
     Kind.IGNORES_COTANGENT),
    ("surrogate_g_abs_g", cg.OpDef(
        "t_fd_surrogate_g_abs_g", lambda xp, x: (xp.round(x), (x,)),
        lambda xp, r, g: (xp.where(xp.abs(r[0]) <= 1.0, g * xp.abs(g), 0.0 * g),),
        gradient="surrogate", surrogate=lambda xp, x: xp.clip(x, -1.0, 1.0), sample=GRID),
     Kind.NOT_LINEAR_IN_COTANGENT),
]


@pytest.mark.parametrize("name, op, kind", ROW_CASES, ids=[c[0] for c in ROW_CASES])
def test_the_reference_fd_row_alone_catches_a_backward_not_linear_in_g(name, op, kind):
  report = causes.diagnose(engine.cross_check([op], backends=[], dtypes=["float64"]), [op])
  fd, = [r for r in report.rows if r.check == "fd"]
  assert fd.ok == (kind is None), fd.note
  if kind is None:
    assert fd.note.endswith("backward matches the forward's derivative")
    return
  expected = finite_diff.IGNORES_G if kind == Kind.IGNORES_COTANGENT else finite_diff.NOT_LINEAR
  assert fd.note.endswith(f"; {expected}"), (name, fd.note)
  assert (fd.diagnosis.kind, fd.diagnosis.input) == (kind, "x")
