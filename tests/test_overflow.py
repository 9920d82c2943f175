"""``finite`` rows and their ``special_value`` diagnosis: a reference in float32 that is NaN
or inf where float64, on the same inputs, gives a number float32 holds fails, at the call
that overflows; a value beyond float32's range, inf in float32, passes."""

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.checker import overflow
from crossgrad.checker.diagnosis import causes

X = np.array([-5.0, -1.0, 0.5, 2.0])  # exp(-25 * -5) = exp(125): beyond float32 (3.4e38).


def _steep(xp, x):
  e = xp.exp(-25 * x)
  return 1 / (e + 1), (e, 1 / (e + 1))


def _overflowing_backward(xp, r, g):
  e, _ = r
  return (25 * g * e / (e + 1) ** 2,)  # inf / inf in float32 where e overflowed.


def _stable_steep(xp, x):
  e = xp.exp(-xp.abs(25 * x))  # At most 1: never overflows.
  y = xp.where(x >= 0, 1 / (1 + e), e / (1 + e))
  return y, (e, y)


def _stable_backward(xp, r, g):
  _, y = r
  return (25 * g * y * (1 - y),)  # The same derivative from the forward's output.


def _check(backward, forward=_steep):
  op = cg.OpDef("t_steep", forward, backward, sample=lambda rng: (X,))
  report = cg.cross_check([op], backends=["torch"], dtypes=["float32", "float64"],
                          modes=["eager"], variants="none")
  return op, report


def test_the_lost_value_fails_a_finite_row_diagnosed_at_the_overflowing_call():
  op, report = _check(_overflowing_backward)
  (row,) = [r for r in report.failures if r.check == "finite"]
  assert (row.backend, row.dtype) == ("numpy", "float32")
  # The true dx[0]: 25 g e^-125 / (1 + e^-125)^2 in float64, a number float32 holds (0).
  assert "dx[0] is NaN in float32 where float64 gives" in row.note
  diagnosed = causes.diagnose(report, [op])
  found = {r.diagnosis.cause for r in diagnosed.failures}
  assert len(found) == 1  # The finite row and the torch float32 rows that got NaN.
  d = next(r.diagnosis for r in diagnosed.failures if r.check == "finite")
  assert (d.kind, d.call, d.input) == ("special_value", "xp.exp", "x")
  assert d.line == _steep.__code__.co_firstlineno + 1 and d.values["element"] == [0]
  assert d.values["value"] == "inf" and d.values["float64"] == pytest.approx(np.exp(125.0))
  assert "compute it in a form that stays within float32's range" in d.message


def test_the_same_derivative_from_the_forward_output_is_green():
  _, report = _check(_stable_backward, _stable_steep)
  assert report.ok, report.table()
  assert not [r for r in report.rows if r.check == "finite"]


def test_a_value_beyond_float32s_range_is_its_right_answer():
  """exp(100) is 2.7e43 in float64: inf is float32's right value, for the output and dx."""
  op = cg.OpDef("t_exp_large", lambda xp, x: (xp.exp(x), (xp.exp(x),)),
                lambda xp, r, g: (g * r[0],),
                sample=lambda rng: (np.array([100.0, 1.0, -2.0]),))
  report = cg.cross_check([op], backends=["torch"], dtypes=["float32"], modes=["eager"],
                          variants="none", special=False)
  assert not [r for r in report.rows if r.check == "finite"], report.table()


def test_first_lost_reads_only_values_the_dtype_holds():
  low = np.array([np.inf, np.nan, 1.0, np.inf], np.float32)
  wide = np.array([1e50, 2.0, 1.0, np.inf])
  lost = overflow.first_lost(low, wide, "float32", "dx")
  assert (lost.index, lost.wide) == ((1,), 2.0)  # Not [0]: 1e50 is inf in float32 too.
  assert overflow.first_lost(low, wide, "float32", "dx", within_range=False).index == (0,)
  assert overflow.first_lost(wide.astype(np.float32)[2:], wide[2:], "float32", "y") is None
