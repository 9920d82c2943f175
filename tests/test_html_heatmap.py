"""The HTML report's causes: each diagnosis and the heatmap of its error, as a real browser
(headless Chromium) draws them: the colours of known cells in a screenshot."""

import dataclasses
import os
import shutil
import subprocess

import numpy as np
import pytest

from crossgrad.checker import html_report
from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.checker.report import Check, Report, Row

_CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@dataclasses.dataclass(frozen=True)
class _DiagnosedRow(Row):
  diagnosis: Diagnosis | None = None


def _planted_report() -> tuple[Report, list[list[float]]]:
  """One cause over two failing rows: an 8x8 error map with its largest error at row 2,
  column 5 and half that at row 6, column 1 (zero elsewhere)."""
  error_map = [[0.0] * 8 for _ in range(8)]
  error_map[2][5], error_map[6][1] = 0.25, 0.125
  found = Diagnosis(Kind.ILL_CONDITIONED, "the matrix has condition number 3.04e+08 <b>",
                    file="my_ops.py", line=42, call="xp.linalg.inv", cause="c1",
                    values={"error_map": error_map, "condition_number": 3.04e8})
  rows = [_DiagnosedRow("inv", "", "jax", "cpu:0", "float32", mode, check, 0.5, 1e-5, False,
                        diagnosis=found)
          for mode, check in (("eager", Check.FORWARD), ("jit", Check.VJP))]
  ok = Row("inv", "", "numpy", "cpu:0", "float32", "eager", Check.FD, 0.0, 1e-5, True)
  return Report([ok] + rows, 1.0, {}), error_map


def test_page_shows_the_cause_once_with_its_rows_and_escapes_text():
  page = html_report.render(_planted_report()[0])
  assert page.count("<h3>Cause ") == 1
  assert "ill_conditioned" in page and "<code>my_ops.py:42</code>" in page
  assert "condition number 3.04e+08 &lt;b&gt;" in page
  assert "jax/eager/forward, jax/jit/vjp" in page
  assert "<script" not in page and "http" not in page.replace("http-equiv", "")
  assert page.count("background: rgb(255, 0, 0)") == 1
  assert page.count("background: rgb(255, 128, 128)") == 1  # 0.125 of 0.25: half faded.
  assert page.count("background: rgb(255, 255, 255)") == 62


def test_heat_colour_scale():
  assert html_report.heat_colour(0.0, 2.0) == (255, 255, 255)
  assert html_report.heat_colour(2.0, 2.0) == (255, 0, 0)
  assert html_report.heat_colour(1.0, 2.0) == (255, 128, 128)
  assert html_report.heat_colour(5.0, 0.0) == (255, 255, 255)


def _screenshot(page: str, folder) -> np.ndarray:
  if _CHROMIUM is None:
    if os.environ.get("CI") == "true":
      pytest.fail("chromium is missing in CI: .ci/run installs it (apt-get install chromium)")
    pytest.skip("chromium is not installed (apt-get install chromium)")
  from PIL import Image  # pylint: disable=g-import-not-at-top  # matplotlib's dependency.
  html, png = folder / "report.html", folder / "shot.png"
  html.write_text(page, encoding="utf-8")
  subprocess.run([_CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                  "--hide-scrollbars", "--force-device-scale-factor=1",
                  f"--user-data-dir={folder / 'profile'}", "--window-size=1000,1400",
                  f"--screenshot={png}", html.as_uri()],
                 check=True, capture_output=True, timeout=120)
  return np.asarray(Image.open(png).convert("RGB")).astype(int)


def _box(shot: np.ndarray, colour: tuple[int, int, int]) -> tuple[int, int, int, int]:
  """(top, left, height, width) of the pixels of exactly ``colour``."""
  ys, xs = np.nonzero(np.all(shot == colour, axis=-1))
  assert ys.size, f"no pixel of {colour}"
  return ys.min(), xs.min(), ys.max() - ys.min() + 1, xs.max() - xs.min() + 1


def test_chromium_draws_the_heatmap_cells_where_the_errors_are(tmp_path):
  report, error_map = _planted_report()
  shot = _screenshot(html_report.render(report), tmp_path)
  cell = html_report.HEAT_CELL_PX
  top, left, height, width = _box(shot, (255, 0, 0))  # The largest error: map[2][5].
  assert (height, width) == (cell, cell)
  half = _box(shot, (255, 128, 128))  # map[6][1].
  assert half == (top + 4 * cell, left - 4 * cell, cell, cell)
  # The map's corner (row 0, column 0) is white, like every cell without error.
  corner = shot[top - 2 * cell:top - 2 * cell + cell, left - 5 * cell:left - 4 * cell]
  assert np.all(corner == 255)
  assert error_map[0][0] == 0
