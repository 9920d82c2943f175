"""The check report as people read it: a summary grid, the failing rows, then every row.

The grid has one line per op and parameter set and one column per backend and mode, both
taken from the rows in the order they first appear (so new check kinds and modes need no
change here). A cell is ``FAIL`` if any of its rows failed, else ``ADVISORY`` if one
reports a divergence at special values, ``skipped`` if all of them are skipped,
``declared`` if a declared gradient's rows are all it verifies (they have no oracle: their
error is no pass or fail, so the cell shows none), ``ok`` otherwise, and shows the error
of its worst row: the one furthest past its tolerance (a row that raised counts as
infinitely far), or, in a passing cell, the one closest to it. Passing rows past their
tolerance are informational (``fd_forward``) and count only in a cell that has nothing
else.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Iterable

from crossgrad.checker.diagnosis import causes
from crossgrad.checker.report import ADVISORY, FAIL, INFORMATIONAL, OK, Check, Report, Row

SKIPPED = "skipped"
DECLARED = "declared"


@dataclasses.dataclass(frozen=True)
class Cell:
  """The rows of one op, parameter set, backend and mode, summed up."""

  status: str
  worst: Row | None
  count: int

  def text(self) -> str:
    if self.worst is None or self.status in (SKIPPED, DECLARED):
      return self.status
    return f"{self.status} {format_error(self.worst.error)}"

  def detail(self) -> str:
    """Which row is the worst, for a tooltip: check, dtype, device, error, tolerance."""
    rows = f"{self.count} row{'s' if self.count != 1 else ''}"
    if self.worst is None:
      return rows
    w = self.worst
    return (f"worst of {rows}: {w.check} {w.dtype} {w.device}, error "
            f"{format_error(w.error)}, tolerance {format_error(w.tolerance)}"
            + (f": {w.note}" if w.note else ""))


@dataclasses.dataclass(frozen=True)
class Grid:
  """``lines`` are (op, params), ``columns`` (backend, mode); ``cells`` maps
  (op, params, backend, mode) to a `Cell`, absent where no row exists."""

  lines: list[tuple[str, str]]
  columns: list[tuple[str, str]]
  cells: dict[tuple[str, str, str, str], Cell]

  def cell(self, line: tuple[str, str], column: tuple[str, str]) -> Cell | None:
    return self.cells.get(line + column)


def format_error(value: float | None) -> str:
  if value is None:
    return "-"
  if value == 0 or not math.isfinite(value):
    return str(value).replace(".0", "")
  return f"{value:.1e}"


def _badness(row: Row) -> float:
  """How far a row is past (> 1) or within (< 1) its tolerance."""
  if row.error is None or math.isnan(row.error):
    return math.inf
  if row.tolerance:
    return row.error / row.tolerance
  return row.error


def summarize(rows: list[Row]) -> Cell:
  """One cell from its rows (see the module docstring)."""
  failing = [r for r in rows if not r.ok]
  if failing:
    return Cell(FAIL, max(failing, key=_badness), len(rows))
  advisory = [r for r in rows if r.advisory]
  if advisory:
    return Cell(ADVISORY, max(advisory, key=_badness), len(rows))
  counted = [r for r in rows if r.check != Check.SKIPPED]
  if not counted:
    return Cell(SKIPPED, None, len(rows))
  declared = [r for r in counted if r.check == Check.DECLARED]
  if declared and all(r.check in INFORMATIONAL for r in counted):
    return Cell(DECLARED, max(declared, key=_badness), len(rows))
  measured = [r for r in counted if r.error is not None]
  within = [r for r in measured if _badness(r) <= 1] or measured
  return Cell(OK, max(within, key=_badness) if within else None, len(rows))


def _unique(values: Iterable) -> list:
  return list(dict.fromkeys(values))


def grid(rows: list[Row]) -> Grid:
  """The grid of a report's rows; backends in order of appearance, each with its modes."""
  backends = _unique(r.backend for r in rows)
  modes = {b: _unique(r.mode for r in rows if r.backend == b) for b in backends}
  groups: dict[tuple[str, str, str, str], list[Row]] = {}
  for row in rows:
    groups.setdefault((row.op, row.params, row.backend, row.mode), []).append(row)
  return Grid(_unique((r.op, r.params) for r in rows),
              [(b, m) for b in backends for m in modes[b]],
              {key: summarize(group) for key, group in groups.items()})


def grid_text(g: Grid) -> str:
  """Aligned text: a backend header line, a mode header line, one line per op and params."""
  header_backend = ["", ""] + [b if i == 0 or g.columns[i - 1][0] != b else ""
                               for i, (b, _) in enumerate(g.columns)]
  header_mode = ["op", "params"] + [m for _, m in g.columns]
  body = [[op, params] + [(c.text() if (c := g.cell((op, params), col)) else "-")
                          for col in g.columns] for op, params in g.lines]
  table = [header_backend, header_mode] + body
  widths = [max(len(line[i]) for line in table) for i in range(len(header_mode))]
  return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
                   for line in table)


def text_report(report: Report, all_rows: bool = False) -> str:
  """The grid, the failing rows (by cause where diagnosed), the advisory ones, every row (with ``all_rows``), the
  summary line."""
  parts = ["summary (worst error per cell):", grid_text(grid(report.rows)), ""]
  if report.failures:
    parts += causes.text(report.failures) or [
        "failing rows:", report.table(failures_only=True, summary=False), ""]
  else:
    parts += ["failing rows: none", ""]
  if report.advisories:
    parts += ["advisory rows (divergences at special values; they do not fail the check):",
              report.table(rows=report.advisories, summary=False), ""]
  if all_rows:
    parts += ["every row:", report.table(summary=False), ""]
  return "\n".join(parts + [report.summary()])
