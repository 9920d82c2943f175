"""A red row says what is wrong and where: planted wrong backwards get their kind, input,
factor and line; correct ops get no diagnosis; the report groups rows under causes."""

import dataclasses
import inspect
import json
import subprocess
import sys

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.checker import engine, grid
from crossgrad.checker.rows import finite_differences
from crossgrad.checker.diagnosis import backward, causes
from crossgrad.checker.diagnosis.kinds import Kind
from crossgrad.checker.report import Report

def _sin(xp, x):
  return xp.sin(x), (x,)


def _sin_twice(xp, r, g):
  (x,) = r
  return (2 * g * xp.cos(x),)


def _sin_negated(xp, r, g):
  (x,) = r
  return (-g * xp.cos(x),)


def _sin_ignores_g(xp, r, g):
  (x,) = r
  return (xp.cos(x),)


def _sin_g_squared(xp, r, g):
  (x,) = r
  return (g * g * xp.cos(x),)


def _sin_right(xp, r, g):
  (x,) = r
  return (g * xp.cos(x),)


def _sin_off(xp, r, g):
  (x,) = r
  return (g * xp.cos(x) + 0.1 * g * x * x,)


def _difference(xp, x, y):
  return x - 2 * y, ()


def _difference_swapped(xp, r, g):
  dx = g
  dy = -2 * g
  return dy, dx


def _matmul(xp, a, b):
  return a @ b, (a, b)


def _matmul_transposed(xp, r, g):
  a, b = r
  return b @ g.T, a.T @ g


def _square_ramp(xp, x):
  return xp.where(x > 0, x * x, 0.0 * x), (x,)


def _square_ramp_mask(xp, r, g):
  (x,) = r
  return (xp.where(x > 1, 2 * x * g, 0.0 * g),)


def _z_squared(xp, z):
  return z * z, (z,)


def _z_squared_conjugated(xp, r, g):
  (z,) = r
  return (2 * g * xp.conj(z),)


def _grid(shape):
  return lambda rng: (rng.standard_normal(shape),)


def _op(name, forward, backward_fn, sample, **kwargs):
  return cg.OpDef(f"t_diagnosis_{name}", forward, backward_fn, sample=sample, **kwargs)


def _line_of(fn, text):
  """The line of ``fn``'s source that holds ``text`` (read independently of crossgrad)."""
  lines, first = inspect.getsourcelines(fn)
  return first + next(i for i, line in enumerate(lines) if text in line)


SQUARES = lambda rng: (rng.standard_normal((4, 4)), rng.standard_normal((4, 4)))
# name, op, kind, input, factor, the line's text.
PLANTED = [
    ("scale", _op("scale", _sin, _sin_twice, _grid((3, 4))), Kind.SCALE, "x", 2.0,
     "2 * g * xp.cos(x)"),
    ("sign", _op("sign", _sin, _sin_negated, _grid((3, 4))), Kind.SIGN, "x", -1.0,
     "-g * xp.cos(x)"),
    ("ignores", _op("ignores", _sin, _sin_ignores_g, _grid((3, 4))),
     Kind.IGNORES_COTANGENT, "x", None, "return (xp.cos(x),)"),
    ("nonlinear", _op("nonlinear", _sin, _sin_g_squared, _grid((3, 4))),
     Kind.NOT_LINEAR_IN_COTANGENT, "x", None, "g * g * xp.cos(x)"),
    ("swapped", _op("swapped", _difference, _difference_swapped,
                    lambda rng: (rng.standard_normal(5), rng.standard_normal(5))),
     Kind.SWAPPED_COTANGENTS, "x", None, "return dy, dx"),
    ("transposed", _op("transposed", _matmul, _matmul_transposed, SQUARES), Kind.TRANSPOSED,
     "a", None, "b @ g.T"),
    ("elements", _op("elements", _square_ramp, _square_ramp_mask, _grid((4, 8))),
     Kind.ELEMENTS, "x", None, "xp.where(x > 1"),
    ("conjugate", _op("conjugate", _z_squared, _z_squared_conjugated,
                      lambda rng: (rng.standard_normal(6) + 1j * rng.standard_normal(6),),
                      allow_complex=True), Kind.CONJUGATE, "z", None, "xp.conj(z)"),
    ("unknown", _op("unknown", _sin, _sin_off, _grid((3, 4))), Kind.UNKNOWN, "x", None,
     "0.1 * g * x * x"),
]


@pytest.mark.parametrize("name, op, kind, input_name, factor, text", PLANTED,
                         ids=[p[0] for p in PLANTED])
def test_planted_backward_gets_its_kind_input_factor_and_line(name, op, kind, input_name,
                                                              factor, text):
  del name
  diagnosis = backward.diagnose(op, {}, engine._sample(op, 0, {}))
  assert diagnosis is not None
  assert (diagnosis.kind, diagnosis.input, diagnosis.factor) == (kind, input_name, factor)
  assert diagnosis.file == inspect.getsourcefile(op.backward)
  assert diagnosis.line == _line_of(op.backward, text)
  assert diagnosis.values["error_map"]


def test_elements_says_how_many_and_where():
  op = PLANTED[6][1]
  x, = engine._sample(op, 0, {})
  diagnosis = backward.diagnose(op, {}, [x])
  wrong = int(np.sum((x > 0) & (x <= 1)))  # Where the mask x > 1 should be x > 0.
  assert diagnosis.values["wrong"] == wrong and diagnosis.values["of"] == x.size
  assert diagnosis.values["where"] == "0 < x <= 1"
  assert f"right except on {wrong} of {x.size} elements, where 0 < x <= 1" in diagnosis.message


def test_unknown_shows_the_numbers():
  op = PLANTED[-1][1]
  x, = engine._sample(op, 0, {})
  diagnosis = backward.diagnose(op, {}, [x])
  # The planted term 0.1 g x^2 against g cos(x): at least 0.1 max(x^2) / max|cos| apart,
  # relative to the largest true value, for the largest |g| near 1: well above 1e-3.
  assert 1e-3 < diagnosis.values["error"] < 10
  assert "no known mistake fits" in diagnosis.message
  assert "the backward gives" in diagnosis.message and "the true value is" in diagnosis.message


def test_a_correct_op_gets_no_diagnosis():
  op = _op("right", _sin, _sin_right, _grid((3, 4)))
  assert backward.diagnose(op, {}, engine._sample(op, 0, {})) is None
  report = engine.cross_check([op], backends=[], dtypes=["float64"])
  assert report.ok
  assert causes.diagnose(report, [op]) is report


def test_rows_that_follow_from_a_wrong_backward_share_its_cause():
  op = PLANTED[0][1]
  report = causes.diagnose(
      engine.cross_check([op], backends=["jax"], dtypes=["float64"], modes=["eager"],
                         special=False), [op])
  failing = report.failures
  assert {r.check for r in failing} >= {"fd", "jvp"}
  assert {r.diagnosis.cause for r in failing} == {
      f"{op.name} -: scale at {inspect.getsourcefile(_sin_twice)}:"
      f"{_line_of(_sin_twice, '2 * g')}"}
  text = "\n".join(causes.text(failing))
  assert text.startswith("failing rows by cause (1 cause):\n1. t_diagnosis_scale -: scale at ")
  assert f"({len(failing)} rows)" in text
  assert "remove the factor 2" in grid.text_report(report)


def test_json_carries_the_diagnosis_and_reads_back():
  op = PLANTED[1][1]
  report = causes.diagnose(engine.cross_check([op], backends=[], dtypes=["float64"]), [op])
  data = json.loads(report.to_json())
  fd, = [row for row in data["rows"] if row["status"] == "FAIL" and row["check"] == "fd"]
  assert {k: fd["diagnosis"][k] for k in ("kind", "input", "factor", "line")} == {
      "kind": "sign", "input": "x", "factor": -1.0,
      "line": _line_of(_sin_negated, "-g * xp.cos(x)")}
  assert set(fd["diagnosis"]) >= {"file", "message", "cause", "call", "values"}
  assert [r.diagnosis for r in Report.from_dict(data).failures] == [
      r.diagnosis for r in report.failures]
  assert all(row["diagnosis"] is None for row in data["rows"] if row["status"] != "FAIL")


def test_binary_prints_causes_and_writes_them_to_json(tmp_path):
  module = tmp_path / "my_ops.py"
  module.write_text(
      "import crossgrad as cg\n"
      "def fwd(xp, x):\n  return xp.sin(x), (x,)\n"
      "def bwd(xp, r, g):\n  (x,) = r\n  return (2 * g * xp.cos(x),)\n"
      "cg.register(cg.OpDef('twice_sin', fwd, bwd, sample=lambda rng: (rng.random(4),)))\n")
  out = tmp_path / "report.json"
  result = subprocess.run(
      [sys.executable, "-m", "crossgrad.check", f"--module={module}", "--ops=twice_sin",
       "--backends=", "--dtypes=float64", "--jobs=1", f"--json={out}"],
      capture_output=True, text=True, timeout=600)
  assert result.returncode == 1, result.stderr
  failing = [r for r in json.loads(out.read_text())["rows"] if r["status"] == "FAIL"]
  # The fd row and the variants' (a batch of 1, leading axes, x10, x100): one cause.
  assert f"1. twice_sin -: scale at {module}:6 ({len(failing)} rows)" in result.stdout
  row, = [r for r in failing if r["check"] == "fd"]
  assert (row["diagnosis"]["kind"], row["diagnosis"]["factor"]) == ("scale", 2.0)


def _inverse(xp, a):
  inverse = xp.linalg.inv(a)
  return inverse, (inverse,)


def _inverse_backward(xp, r, g):
  (inverse,) = r
  return (-(inverse.T @ g @ inverse.T),)


def _hilbert(rng):
  i = np.arange(6.0)
  return (1.0 / (i[:, None] + i[None, :] + 1) + 1e-3 * rng.random((6, 6)),)


def test_a_right_backward_of_an_ill_conditioned_forward_is_not_called_wrong():
  op = _op("hilbert", _inverse, _inverse_backward, _hilbert)
  a, = engine._sample(op, 0, {})
  rows = finite_differences.finite_difference_rows(op, {}, [a])
  assert not rows[0].ok  # float64 finite differences lose the digits.
  diagnosis = backward.diagnose(op, {}, [a])
  assert (diagnosis.kind, diagnosis.input) == (Kind.ILL_CONDITIONED, "a")
  assert diagnosis.line == _line_of(_inverse, "return inverse, (inverse,)")
  # d inv(A) = -inv(A) dA inv(A): ||J||_F ||A||_F / ||inv(A)||_F is A's Frobenius condition.
  assert diagnosis.values["condition_number"] == pytest.approx(np.linalg.cond(a, "fro"),
                                                               rel=1e-2)


def test_a_diagnosis_out_of_time_says_so_and_claims_nothing():
  op = PLANTED[0][1]
  report = engine.cross_check([op], backends=[], dtypes=["float64"])
  ticks = iter(range(1000))
  slow = causes.diagnose(report, [op], clock=lambda: 10.0 * next(ticks))
  diagnosis = slow.failures[0].diagnosis
  assert all(r.diagnosis == diagnosis for r in slow.failures if not r.variant)
  assert all(r.diagnosis.kind == Kind.UNKNOWN and r.diagnosis.message.startswith(
      "not diagnosed within the time the op's rows took") for r in slow.failures)


def _legacy_square_grad(op, grad):
  x = op.inputs[0]
  return grad * 4 * x


def test_a_generated_op_is_located_in_the_functions_it_stands_for():
  # As `crossgrad.tf1.port` makes them: a generated forward naming the legacy pair.
  def generated_forward(xp, x):
    return x * x, (x,)
  generated_forward.defined_by = (np.square, _legacy_square_grad)
  op = cg.OpDef("t_diagnosis_port", generated_forward,
                lambda xp, r, g: (4 * g * r[0],), sample=_grid((4,)))
  diagnosis = backward.diagnose(op, {}, engine._sample(op, 0, {}))
  assert (diagnosis.kind, diagnosis.factor) == (Kind.SCALE, 2.0)
  assert (diagnosis.file, diagnosis.line) == (
      inspect.getsourcefile(_legacy_square_grad),
      _line_of(_legacy_square_grad, "return grad * 4 * x"))


def _ste(xp, x):
  return xp.round(x), (x,)


def _ste_negated(xp, r, g):
  (x,) = r
  return (xp.where(xp.abs(x) <= 1.0, -g, 0.0 * g),)


def test_a_surrogate_op_is_diagnosed_against_its_surrogate():
  op = cg.OpDef("t_diagnosis_ste", _ste, _ste_negated, gradient="surrogate",
                surrogate=lambda xp, x: xp.clip(x, -1.0, 1.0), sample=_grid((3, 4)))
  diagnosis = backward.diagnose(op, {}, engine._sample(op, 0, {}))
  assert (diagnosis.kind, diagnosis.factor) == (Kind.SIGN, -1.0)
  assert "-1 times the derivative of the surrogate" in diagnosis.message
  assert diagnosis.line == _line_of(_ste_negated, "-g, 0.0 * g")


@pytest.mark.filterwarnings("ignore:invalid value encountered in log")
def test_no_finite_derivative_claims_nothing():
  op = _op("log", lambda xp, x: (xp.log(x), (x,)), lambda xp, r, g: (2 * g / r[0],),
           lambda rng: (np.array([1e-39, 2.0]),))
  assert not finite_differences.finite_difference_rows(op, {}, engine._sample(op, 0, {}))[0].ok
  assert backward.diagnose(op, {}, engine._sample(op, 0, {})) is None  # Steps reach x < 0.


@pytest.mark.parametrize("backward_fn, kind, factor", [
    (_sin_twice, Kind.SCALE, 2.0), (_sin_ignores_g, Kind.IGNORES_COTANGENT, None),
    (_sin_right, None, None)])
def test_a_large_input_is_tested_along_random_directions(backward_fn, kind, factor):
  op = _op("large", _sin, backward_fn, _grid((40, 40)))  # Past the elementwise limit.
  assert 40 * 40 > backward.JACOBIAN_LIMIT
  diagnosis = backward.diagnose(op, {}, engine._sample(op, 0, {}))
  assert (diagnosis and (diagnosis.kind, diagnosis.factor)) == (kind and (kind, factor))


def test_rows_that_raised_are_unknown_with_the_exception():
  def raising(xp, x):
    raise ValueError("planted")
  op = _op("raises", raising, _sin_right, _grid((3,)))
  report = causes.diagnose(engine.cross_check([op], backends=[], dtypes=["float64"]), [op])
  diagnosis = report.failures[0].diagnosis
  assert diagnosis.kind == Kind.UNKNOWN
  assert diagnosis.message.startswith("it raised, so there is nothing to compare")
  assert "ValueError: planted" in diagnosis.message


def _one_pass_variance(xp, x):
  mean = xp.mean(x, axis=-1)
  return xp.mean(x * x, axis=-1) - mean * mean, (x, mean)


def _one_pass_variance_backward(xp, residuals, g):
  x, mean = residuals
  return (2.0 * g[..., None] * (x - mean[..., None]) / x.shape[-1],)


def test_a_row_that_raised_joins_no_divergence():
  op = _op("one_pass_variance", _one_pass_variance, _one_pass_variance_backward,
           lambda rng: (1000.0 + rng.standard_normal((4, 16)),))
  report = engine.cross_check([op], backends=["jax"], dtypes=["float32"], modes=["eager"],
                              special=False)
  eager = next(r for r in report.failures if r.check == "forward")
  raised = dataclasses.replace(eager, mode="jit", error=None, note="ValueError: planted")
  report = causes.diagnose(Report([*report.rows, raised], report.seconds, {}), [op])
  by_mode = {r.mode: r.diagnosis for r in report.failures if r.check == "forward"}
  assert by_mode["eager"].kind == Kind.CANCELLATION
  assert by_mode["jit"].kind == Kind.UNKNOWN
  assert by_mode["jit"].message.startswith("it raised, so there is nothing to compare")
