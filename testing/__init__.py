"""Cross-checks inside a user's own tests: `assert_cross_check` raises `AssertionError` with
the causes of the red rows (kind, input, ``file.py:LINE``, message), as the binary prints them.

    def test_my_ops():
      crossgrad.testing.assert_cross_check(["clipped_ste"], backends=["jax"], dtypes=["float32"])
"""

from __future__ import annotations

from typing import Any, Iterable

from crossgrad.checker import engine
from crossgrad.checker import selection
from crossgrad.checker.diagnosis import causes
from crossgrad.checker.report import Report
from crossgrad.registry.opdef import OpDef


def failure_text(report: Report) -> str:
  """The failing rows of a diagnosed report by cause (`causes.text`), or as a table, then
  the summary line; for a report that checked nothing, says so."""
  if not report.checked:
    return (f"nothing checked: every row is skipped or informational\n"
            f"{report.table(summary=True)}")
  lines = causes.text(report.failures) or [
      "failing rows:", report.table(failures_only=True, summary=False)]
  return "\n".join([*lines, report.summary()])


def assert_cross_check(ops: Iterable[str | OpDef] | str | OpDef | None = None, *,
                       seed: int = 0, **selection_: Any) -> Report:
  """`crossgrad.cross_check` of ``ops`` with ``selection_`` (backends, dtypes, devices,
  modes, tolerance, special, impls, ...); returns the report when every row passed, else
  raises `AssertionError` whose text is the diagnosed failing rows (`failure_text`)."""
  opdefs = selection.ops(ops)
  report = engine.cross_check(opdefs, seed=seed, **selection_)
  if report.failures:
    report = causes.diagnose(report, opdefs, seed=seed)
  if not report.ok:
    raise AssertionError(failure_text(report))
  return report
