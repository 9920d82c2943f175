"""The check report as one self-contained HTML page (a CI artifact): the summary grid, the
causes of failing rows (each diagnosis with a heatmap of where in the array its error lies),
the failing rows and every row (open with ``all_rows``, folded otherwise). Inline CSS only:
no script, no link, no external resource; every piece of text is escaped.
"""

from __future__ import annotations

import dataclasses
import html
import math

from crossgrad.checker import grid as grid_lib
from crossgrad.checker.diagnosis.kinds import Diagnosis
from crossgrad.checker.report import Report, Row

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; white-space: nowrap; }
th { background: #f0f0f0; }
td.note { white-space: normal; max-width: 40em; }
.ok { background: #e6f4e6; }
.FAIL { background: #f8d7d7; font-weight: bold; }
.ADVISORY { background: #fff3cd; }
.skipped { background: #eeeeee; color: #666; }
.absent { color: #aaa; }
table.heat { border-collapse: collapse; margin: 0.3em 0 1em; outline: 1px solid #999; }
table.heat td { width: 10px; height: 10px; padding: 0; border: none; }
"""
HEAT_CELL_PX = 10  # Each heatmap cell is a square this wide (table.heat td).


def _e(value) -> str:
  return html.escape(str(value), quote=True)


def _value(value) -> str:
  if isinstance(value, float):
    return "nan" if math.isnan(value) else f"{value:.2e}"
  return "-" if value in (None, "") else str(value)


def _grid_table(g: grid_lib.Grid) -> list[str]:
  backends = list(dict.fromkeys(b for b, _ in g.columns))
  out = ["<table class='grid'>", "<tr><th rowspan='2'>op</th><th rowspan='2'>params</th>"]
  out += [f"<th colspan='{sum(b == c for c, _ in g.columns)}'>{_e(b)}</th>" for b in backends]
  out += ["</tr>", "<tr>" + "".join(f"<th>{_e(m)}</th>" for _, m in g.columns) + "</tr>"]
  for line in g.lines:
    cells = []
    for column in g.columns:
      cell = g.cell(line, column)
      if cell is None:
        cells.append("<td class='absent'>-</td>")
      else:
        cells.append(f"<td class='{cell.status}' title='{_e(cell.detail())}'>"
                     f"{_e(cell.text())}</td>")
    out.append(f"<tr><td>{_e(line[0])}</td><td>{_e(line[1])}</td>{''.join(cells)}</tr>")
  return out + ["</table>"]


def _rows_table(rows: list[Row]) -> list[str]:
  names = [f.name for f in dataclasses.fields(Row) if f.name != "diagnosis"]  # Per cause.
  out = ["<table class='rows'>", "<tr>" + "".join(f"<th>{_e(n)}</th>" for n in names) + "</tr>"]
  for row in rows:
    status = row.status
    tds = []
    for name in names:
      value = getattr(row, name)
      if name == "ok":
        tds.append(f"<td class='{status}'>{status}</td>")
      else:
        css = " class='note'" if name == "note" else ""
        tds.append(f"<td{css}>{_e(_value(value))}</td>")
    out.append("<tr>" + "".join(tds) + "</tr>")
  return out + ["</table>"]


def heat_colour(value: float, top: float) -> tuple[int, int, int]:
  """The heatmap's colour of ``value`` on a scale up to ``top``: white (no error) to pure
  red (the map's largest error)."""
  t = min(max(value / top, 0.0), 1.0) if top > 0 else 0.0
  fade = round(255 * (1.0 - t))
  return 255, fade, fade


def _heatmap(error_map: list[list[float]]) -> list[str]:
  """The error map as a table of coloured squares, the value in each one's title."""
  top = max((v for row in error_map for v in row), default=0.0)
  out = [f"<p>Elementwise error (|actual - expected| / scale), white 0 to red "
         f"{_e(_value(top))}:</p>", "<table class='heat'>"]
  for row in error_map:
    cells = "".join("<td style='background: rgb({}, {}, {})' title='{}'></td>".format(
        *heat_colour(v, top), _e(_value(v))) for v in row)
    out.append(f"<tr>{cells}</tr>")
  return out + ["</table>"]


def causes(rows: list[Row]) -> list[tuple[Diagnosis, list[Row]]]:
  """The failing rows that carry a diagnosis, grouped by cause (its id, else its kind,
  file, line and message), in the order of their first row."""
  groups: dict[tuple, tuple[Diagnosis, list[Row]]] = {}
  for row in rows:
    found = getattr(row, "diagnosis", None)
    if isinstance(found, dict):  # A row read back from a report's JSON.
      found = Diagnosis.from_dict(found)
    if found is not None:
      key = (found.cause,) if found.cause else (found.kind, found.file, found.line,
                                               found.message)
      groups.setdefault(key, (found, []))[1].append(row)
  return list(groups.values())


def _causes_section(rows: list[Row]) -> list[str]:
  out = []
  for i, (found, explained) in enumerate(causes(rows), 1):
    where = f" at <code>{_e(found.where())}</code>" if found.where() else ""
    call = f" in <code>{_e(found.call)}</code>" if found.call else ""
    out += [f"<div class='cause' id='cause-{i}'>",
            f"<h3>Cause {i}: <span class='kind'>{_e(found.kind)}</span>{where}{call}</h3>",
            f"<p class='message'>{_e(found.message)}</p>",
            f"<p>Explains {len(explained)} failing row(s): "
            + _e(", ".join(f"{r.backend}/{r.mode}/{r.check}" for r in explained[:12]))
            + (" ..." if len(explained) > 12 else "") + "</p>"]
    if found.values.get("error_map"):
      out += _heatmap(found.values["error_map"])
    out.append("</div>")
  return out


def render(report: Report, all_rows: bool = False) -> str:
  """The page: title, summary line, grid, failing rows, every row, environment."""
  status = "ok" if report.ok and report.rows else "FAIL"
  parts = ["<!DOCTYPE html>", "<html lang='en'>", "<head>", "<meta charset='utf-8'>",
           f"<title>crossgrad cross-check: {status}</title>", f"<style>{_STYLE}</style>",
           "</head>", "<body>", "<h1>crossgrad cross-check</h1>",
           f"<p class='{status}'>{_e(report.summary())}</p>",
           "<h2>Summary (worst error per cell)</h2>"]
  parts += _grid_table(grid_lib.grid(report.rows))
  found = _causes_section(report.failures)
  if found:
    parts += ["<h2>Causes</h2>"] + found
  parts += ["<h2>Failing rows</h2>"]
  parts += _rows_table(report.failures) if report.failures else ["<p>None.</p>"]
  parts += [f"<details{' open' if all_rows else ''}>",
            f"<summary>Every row ({len(report.rows)})</summary>"]
  parts += _rows_table(report.rows) + ["</details>", "<h2>Environment</h2>", "<table>"]
  parts += [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in report.environment.items()]
  parts += ["</table>", "</body>", "</html>", ""]
  return "\n".join(parts)


def write(path: str, report: Report, all_rows: bool = False):
  with open(path, "w", encoding="utf-8") as f:
    f.write(render(report, all_rows))
