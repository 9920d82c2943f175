"""The check report as one self-contained HTML page (a CI artifact): the summary grid, the
failing rows and every row (open with ``all_rows``, folded otherwise). Inline CSS only: no
script, no link, no external resource; every piece of text is escaped.
"""

from __future__ import annotations

import dataclasses
import html
import math

from crossgrad.checker import grid as grid_lib
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
"""


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


def render(report: Report, all_rows: bool = False) -> str:
  """The page: title, summary line, grid, failing rows, every row, environment."""
  status = "ok" if report.ok and report.rows else "FAIL"
  parts = ["<!DOCTYPE html>", "<html lang='en'>", "<head>", "<meta charset='utf-8'>",
           f"<title>crossgrad cross-check: {status}</title>", f"<style>{_STYLE}</style>",
           "</head>", "<body>", "<h1>crossgrad cross-check</h1>",
           f"<p class='{status}'>{_e(report.summary())}</p>",
           "<h2>Summary (worst error per cell)</h2>"]
  parts += _grid_table(grid_lib.grid(report.rows))
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
