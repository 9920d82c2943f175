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
  backends = _unique(r.implementation for r in rows)  # A kernel is a backend of its own.
  modes = {b: _unique(r.mode for r in rows if r.implementation == b) for b in backends}
  groups: dict[tuple[str, str, str, str], list[Row]] = {}
  for row in rows:
    groups.setdefault((row.op, row.params, row.implementation, row.mode), []).append(row)
  return Grid(_unique((r.op, r.params) for r in rows),
              [(b, m) for b in backends for m in modes[b]],
              {key: summarize(group) for key, group in groups.items()})


WIDTH = 100  # A log's width, where no terminal says otherwise.


def _blocks(columns: list[tuple[str, str]], widths: list[int], room: int) -> list[list[int]]:
  """Column indices in blocks of at most ``room`` characters (each column with the two
  spaces before it): whole backends while they fit, a backend wider than a block by mode."""
  by_backend: dict[str, list[int]] = {}
  for i, (backend, _) in enumerate(columns):
    by_backend.setdefault(backend, []).append(i)
  blocks: list[list[int]] = [[]]
  for indices in by_backend.values():
    used = sum(widths[i] + 2 for i in blocks[-1])
    if blocks[-1] and used + sum(widths[i] + 2 for i in indices) > room:
      blocks.append([])
    for i in indices:
      if blocks[-1] and sum(widths[j] + 2 for j in blocks[-1]) + widths[i] + 2 > room:
        blocks.append([])
      blocks[-1].append(i)
  return blocks


def _aligned(lines: list[list[str]]) -> str:
  widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
  return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
                   for line in lines)


def grid_text(g: Grid, width: int | None = WIDTH) -> str:
  """Aligned text: a backend header line, a mode header line, one line per op and params;
  where the columns are wider than ``width`` (None: never), in blocks of backends one under
  the other, each block starting with the op and params again."""
  keys = [["", ""], ["op", "params"]] + [list(line) for line in g.lines]
  columns = [[b if i == 0 or g.columns[i - 1][0] != b else "", m]
             + [(c.text() if (c := g.cell(line, (b, m))) else "-") for line in g.lines]
             for i, (b, m) in enumerate(g.columns)]
  widths = [max(map(len, column)) for column in columns]
  room = math.inf if width is None else width - sum(max(map(len, k)) for k in zip(*keys)) - 2
  blocks = []
  for block in _blocks(g.columns, widths, room):
    shown = [list(columns[i]) for i in block]
    shown[0][0] = g.columns[block[0]][0]  # A block split within a backend names it again.
    blocks.append(_aligned([key + [column[n] for column in shown]
                            for n, key in enumerate(keys)]))
  return "\n\n".join(blocks)


def text_report(report: Report, all_rows: bool = False, width: int | None = WIDTH) -> str:
  """The grid (in blocks no wider than ``width``), the failing rows (by cause where
  diagnosed), the advisory ones, every row (with ``all_rows``), the summary line."""
  parts = ["summary (worst error per cell):", grid_text(grid(report.rows), width), ""]
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
