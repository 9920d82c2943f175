"""The cross-check passes correct ops and catches planted wrong gradients."""

import dataclasses
import json
import subprocess
import sys
import types

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.checker import engine
from crossgrad.checker.rows import finite_differences
from crossgrad.registry.ops import BUILTIN


def _leaky_fwd(xp, x):
  return xp.where(x > 0, x, 0.2 * x), (x,)


def _product_fwd(xp, x, y):
  return x * y, (x, y)


def _sample_off_kink(rng):
  z = rng.standard_normal((4, 6))
  return (z + 0.05 * np.sign(z),)


def _sample_pair(rng):
  return rng.standard_normal((3, 4)), rng.standard_normal((3, 4))


PLANTED = {
    "scaled": cg.OpDef(
        "t_scaled", _leaky_fwd,
        lambda xp, r, g: (xp.where(r[0] > 0, g, 0.2 * g) * 1.01,), sample=_sample_off_kink),
    "wrong_on_one_sign": cg.OpDef(
        "t_wrong_sign", _leaky_fwd,
        lambda xp, r, g: (xp.where(r[0] > 0, g, g),), sample=_sample_off_kink),
    "swapped_partials": cg.OpDef(
        "t_swapped", _product_fwd,
        lambda xp, r, g: (g * r[0], g * r[1]), sample=_sample_pair),
    "wrong_surrogate": cg.OpDef(
        "t_wrong_surrogate", lambda xp, x: (xp.round(x), (x,)),
        lambda xp, r, g: (g,), gradient="surrogate",
        surrogate=lambda xp, x: xp.clip(x, -1.0, 1.0),
        sample=lambda rng: (rng.standard_normal((3, 4)) * 3,)),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_wrong_backward_is_caught(name):
  report = cg.cross_check([PLANTED[name]], backends=[])
  assert not report.ok
  (failure,) = [r for r in report.failures if r.check == "fd"]
  assert failure.error > 1e-3
  # The variants of the sample the op takes fail alike (`variant` rows), or return the
  # sample's shape for an input the variant broadcasts.
  assert {r.check for r in report.failures} == {"fd", "variant"}
  assert all("is NOT the derivative" in r.note
             or "cotangent shape differs from the input's" in r.note for r in report.failures)


def test_exact_inputs_of_a_surrogate_op_are_checked_against_the_forward():
  bernoulli = cg.get("bernoulli_mask")

  def backward(xp, residuals, g):  # dfeatures with p where the sampled mask belongs.
    p, features, _ = residuals
    return xp.unbroadcast(g * features, p), xp.unbroadcast(g * p, features), None

  planted = dataclasses.replace(bernoulli, name="t_bernoulli_planted", backward=backward)
  report = cg.cross_check([planted], backends=[])
  (failure,) = [r for r in report.failures if r.check == "fd"]
  assert failure.note.startswith("inputs features;")
  variants = [r for r in report.failures if r.check == "variant"]
  assert variants and all(r.note.startswith("inputs features;") for r in variants)
  assert {(r.check, r.ok) for r in cg.cross_check(["bernoulli_mask"], backends=[]).rows} == {
      ("fd", True), ("fd_forward", True), ("variant", True), ("skipped", True)}


def test_backend_specific_backward_is_caught_by_the_comparison():
  def backward(xp, residuals, g):
    (x,) = residuals
    return (xp.where(x > 0, g, 0.2 * g) * (1.5 if xp.backend == "jax" else 1.0),)

  op = cg.OpDef("t_jax_only_bug", _leaky_fwd, backward, sample=_sample_off_kink)
  report = cg.cross_check([op], dtypes=["float32"])
  failing = {(r.backend, r.check) for r in report.failures}
  # Forward mode transposes the backward, so the planted bug shows in JAX's jvp rows too;
  # and on the variants of the sample.
  assert failing == {("jax", "vjp"), ("jax", "special"), ("jax", "jvp"), ("jax", "variant")}
  # A special row names the worst element that is not special (a wrong value at ordinary
  # inputs: a failure, not an advisory).
  assert all(r.note.removeprefix("not at special values: ").startswith("worst: dx[")
             and " vs reference " in r.note
             for r in report.failures if r.check in ("vjp", "special"))


def test_correct_builtins_pass_finite_differences_across_seeds():
  for seed in range(20):
    for op in BUILTIN:
      for params in op.param_sets:
        params = op.resolve_params(params)
        inputs = op.sample(np.random.default_rng(seed))
        for row in finite_differences.finite_difference_rows(op, params, inputs, seed):
          assert row.ok, (seed, row)


# The op README's main job is run on here; CI's first command runs that job over every
# built-in op. Rows are seeded per op, so this op's rows are the ones that job draws.
README_JOB_OP = "leaky_relu"


def test_cross_check_as_readme_runs_it(tmp_path):
  """README's main job: the binary with its default flags (seed, backends, modes, dtypes),
  exit status 0, and a row for every backend, mode and dtype. Another seed would miss what
  the default one draws."""
  result = subprocess.run([sys.executable, "-m", "crossgrad.check", f"--ops={README_JOB_OP}",
                           f"--json={tmp_path}/r.json"],
                          capture_output=True, text=True, check=False)
  assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
  report = types.SimpleNamespace(rows=[types.SimpleNamespace(**row) for row in json.loads(
      (tmp_path / "r.json").read_text())["rows"]])
  assert {r.op for r in report.rows} == {README_JOB_OP}
  modes = {"tensorflow": ("eager", "graph", "jit"), "jax": ("eager", "jit"),
           "torch": ("eager", "compile")}
  transforms = {"tensorflow": ("vectorized_map",), "jax": ("vmap", "scan", "checkpoint",
                "batched_vjp"), "torch": ("vmap", "batched_vjp")}
  backends = base.default_backends()
  # Compiled torch runs no forward mode or second order: skipped rows say why.
  higher = {b: ("eager",) if b == "torch" else modes[b] for b in backends}
  for check, chosen in (("vjp", [{b: modes[b] for b in backends},
                                 {b: transforms[b] for b in backends}]),
                        ("jvp", [higher]), ("second_order", [higher])):
    combos = {(r.op, r.backend, r.mode, r.dtype) for r in report.rows if r.check == check}
    assert combos == {(README_JOB_OP, b, m, d) for by_backend in chosen
                      for b, ms in by_backend.items() for m in ms
                      for d in ("float32", "float64")}, check
  if "torch" in backends:
    skipped = {(r.mode, r.note.split(":")[0]) for r in report.rows
               if r.backend == "torch" and r.check == "skipped"}
    assert skipped == {("compile", "jvp"), ("compile", "second_order")}


def test_custom_add_is_declared_with_no_oracle_and_counted():
  report = cg.cross_check(["custom_add"], backends=[])
  (row, skipped) = report.rows  # Its declared row, and the variants it does not take.
  assert skipped.check == "skipped" and skipped.note.startswith("variants the op does not")
  assert row.check == "declared" and row.ok
  assert row.error > 0.1  # Far from the derivative of c + k.
  assert "no oracle" in row.note
  assert not report.ok  # An informational row alone checked nothing.
  assert "1 with no oracle (declared gradients)" in report.summary()


def test_report_json_and_table():
  report = cg.cross_check(["leaky_relu"], backends=["jax"], modes=["jit"])
  data = json.loads(report.to_json())
  assert data["ok"] is True
  # Per parameter set: fd, 7 variant rows (a batch of 1 and of 0, a leading axis of 1 and
  # of 2, x10, x100, alpha doubled), then per dtype forward, vjp, special, jvp, second_order, and in float64
  # 2 variant rows (a leading axis: `variants.BACKEND_FAMILIES`; cotangents 0 at every other
  # element) and a custom_rule row (jit uses the backward).
  assert len(data["rows"]) == len(report.rows) == 2 * (1 + 7 + 2 * 5 + 2 + 1)
  assert sum(r["check"] == "custom_rule" and r["ok"] for r in data["rows"]) == 2
  assert data["environment"]["jax_devices"] == ["cpu:0"]
  table = report.table()
  assert table.splitlines()[0].split()[:3] == ["op", "params", "backend"]
  assert table.splitlines()[-1].startswith(
      "crossgrad cross-check: 42 checks, 0 failing, 0 with no oracle")


def test_sampleless_op_fails_with_a_clear_row():
  op = cg.OpDef("t_no_sample", _leaky_fwd, lambda xp, r, g: (g,))
  (row,) = cg.cross_check([op], backends=[]).rows
  assert not row.ok and "cannot cross-check an op without 'sample'" in row.note


def test_relative_error_metric():
  assert engine.max_relative_error(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 0.0
  assert engine.max_relative_error(np.array([1.0, 2.2]), np.array([1.0, 2.0])) == \
      pytest.approx(0.2 / 2.2)
  assert engine.max_relative_error(np.array([np.nan]), np.array([1.0])) == np.inf
  assert engine.max_relative_error(np.zeros(2), np.zeros(3)) == np.inf


def test_a_backend_warming_up_runs_last_and_rows_keep_one_runs_order(monkeypatch):
  """A backend with a `warm_up` (torch: Inductor's C++ probe, seconds on a cold cache) gets
  its units after every other backend's, so the warm-up runs alongside them instead of
  holding up its first row; the report's rows come in `work_units` order all the same."""
  def rows_and_calls():
    calls = []
    for name in ("tensorflow", "jax"):
      module = base.load(name)
      monkeypatch.setattr(module, "evaluate", lambda *a, _f=module.evaluate, _n=name, **k: (
          calls.append(_n), _f(*a, **k))[1])
    report = cg.cross_check(["leaky_relu", "custom_add"], backends=["tensorflow", "jax"],
                            modes=["eager"], special=False)
    assert report.ok
    return [(r.op, r.params, r.dtype, r.backend, r.mode, r.check) for r in report.rows], calls

  in_order, calls = rows_and_calls()
  assert calls[:2] == ["tensorflow", "jax"]  # One op, parameter set and dtype at a time.
  started = []
  monkeypatch.setattr(base.load("jax"), "warm_up", started.append, raising=False)
  warming_last, calls = rows_and_calls()
  assert started == [["eager"]]
  assert calls == sorted(calls, key=["tensorflow", "jax"].index)  # Every jax call last.
  assert warming_last == in_order
