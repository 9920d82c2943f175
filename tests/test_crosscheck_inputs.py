"""cross_check(inputs=...) checks the given arrays instead of the op's sample."""

import numpy as np

import crossgrad as cg


def _forward(xp, x):
  return xp.where(x > 0, x, 0.2 * x), (x,)


def _backward_wrong_above_5(xp, residuals, g):
  """leaky_relu's backward, planted wrong (doubled) where x > 5: samples never go there."""
  (x,) = residuals
  return (xp.where(x > 5, 2.0 * g, xp.where(x > 0, g, 0.2 * g)),)


def _sample(rng):
  z = rng.uniform(-1.0, 1.0, (4, 6))
  return (z + 0.05 * np.sign(z),)


WRONG_ABOVE_5 = cg.OpDef("t_wrong_above_5", _forward, _backward_wrong_above_5, sample=_sample)


def test_given_inputs_reach_the_check():
  # Its sample misses the bug; the sample's values x10 and x100 (`variant` rows) do not.
  assert cg.cross_check([WRONG_ABOVE_5], backends=[], variants="none").ok
  scaled = cg.cross_check([WRONG_ABOVE_5], backends=[]).failures
  assert {(r.check, r.variant) for r in scaled} == {("variant", "values x10"),
                                                   ("variant", "values x100")}
  report = cg.cross_check([WRONG_ABOVE_5], backends=[], inputs=[np.linspace(5.5, 9.0, 2000)],
                          variants="none")
  (failure,) = report.failures
  assert failure.check == "fd" and "is NOT the derivative" in failure.note


def test_given_inputs_of_any_size_pass_for_a_correct_op():
  z = np.random.default_rng(3).standard_normal(5000)
  x = z + 0.05 * np.sign(z)
  report = cg.cross_check(["leaky_relu"], backends=["jax"], dtypes=["float64"],
                          modes=["eager"], inputs=[x])
  assert report.ok
  assert {r.check for r in report.rows} == {"fd", "forward", "vjp", "special", "jvp",
                                            "second_order", "variant", "custom_rule"}
