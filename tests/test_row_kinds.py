"""Row kinds are one table (`crossgrad.checker.rows`): a kind added in one place makes
its rows in a report, beside the others' unchanged, and none once removed."""

import dataclasses

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.checker import rows as row_kinds
from crossgrad.checker.report import Report
from crossgrad.checker.rows import setting


def _output_sums(run: setting.ModeRun):
  """A toy kind: the sum of the backend's outputs against the reference's, one row per
  backend, device and mode."""
  got = sum(float(np.sum(o, dtype=np.float64)) for o in run.results[0])
  want = sum(float(np.sum(o, dtype=np.float64)) for o in run.target.outputs)
  error = abs(got - want) / max(1.0, abs(want))
  return [run.context.row("output_sum", error, run.target.tolerance,
                          error <= run.target.tolerance)]


TOY = row_kinds.RowKind("output_sum", row_kinds.Scope.MODE, _output_sums)


def _check(op="leaky_relu"):
  return cg.cross_check([op], backends=["jax"], dtypes=["float32"], modes=["eager", "jit"],
                        special=False)


def _without_seconds(rows):
  return [dataclasses.replace(r, seconds=0.0) for r in rows]


def test_a_registered_kind_makes_rows_and_none_once_removed():
  row_kinds.register(TOY)
  try:
    with_toy = _check()
  finally:
    row_kinds.unregister(TOY.name)
  without = _check()
  toy = [r for r in with_toy.rows if r.check == "output_sum"]
  assert sorted((r.params, r.mode) for r in toy) == sorted(
      (p, m) for p in {r.params for r in without.rows} for m in ("eager", "jit"))
  assert all(r.ok and r.error < 1e-6 for r in toy), toy
  assert not any(r.check == "output_sum" for r in without.rows)
  assert _without_seconds(r for r in with_toy.rows if r.check != "output_sum") == \
      _without_seconds(without.rows)
  assert with_toy.ok and without.ok
  read_back = Report.from_dict(with_toy.to_dict())
  assert [r.check for r in read_back.rows].count("output_sum") == len(toy)


def test_a_registered_kind_that_fails_fails_the_report():
  def wrong(run):
    return [run.context.row("always_wrong", 1.0, 0.0, False, "planted")]

  row_kinds.register(row_kinds.RowKind("always_wrong", row_kinds.Scope.MODE, wrong))
  try:
    report = _check()
  finally:
    row_kinds.unregister("always_wrong")
  assert not report.ok
  assert {(r.check, r.mode, r.note) for r in report.failures} == {
      ("always_wrong", "eager", "planted"), ("always_wrong", "jit", "planted")}


COMPLEX_SQUARE = cg.OpDef(
    name="test_row_kinds_complex_square", forward=lambda xp, z: (z * z, z),
    backward=lambda xp, z, g: (g * 2 * z,), allow_complex=True,
    sample=lambda rng: (rng.standard_normal(3) + 1j * rng.standard_normal(3),))


def test_complex_ops_get_rows_only_of_the_kinds_that_cover_them():
  covers = row_kinds.RowKind("complex_seen", row_kinds.Scope.MODE,
                             lambda run: [run.context.row("complex_seen", 0.0, 0.0, True)],
                             complex_inputs=True)
  row_kinds.register(TOY)
  row_kinds.register(covers)
  try:
    report = _check(COMPLEX_SQUARE)
  finally:
    row_kinds.unregister(TOY.name)
    row_kinds.unregister(covers.name)
  assert not any(r.check == "output_sum" for r in report.rows)
  modes = [r.mode for r in report.rows if r.backend == "jax" and r.check == "forward"]
  assert [r.mode for r in report.rows if r.check == "complex_seen"] == modes == ["eager", "jit"]
  assert [r.mode for r in report.rows
          if r.check == "skipped" and r.note.startswith("complex inputs")] == modes


def test_a_kind_name_is_registered_once():
  with pytest.raises(cg.CrossgradError, match="row kind"):
    row_kinds.register(dataclasses.replace(TOY, name="forward_vjp"))
  assert [k.name for k in row_kinds.KINDS].count("forward_vjp") == 1
