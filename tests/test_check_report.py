"""The check report: the summary grid's cells, the text layout, and the HTML page."""

import html.parser
import re
import subprocess
import sys

from crossgrad.checker import grid
from crossgrad.checker import html_report
from crossgrad.checker.report import Report, Row


def _row(op="relu", params="-", backend="jax", mode="jit", check="vjp", error=1e-7,
         tolerance=1e-5, ok=True, device="cpu:0", dtype="float32", note=""):
  return Row(op, params, backend, device, dtype, mode, check, error, tolerance, ok, note)


ROWS = [
    _row(backend="numpy", mode="eager", check="fd", error=2e-11, tolerance=1e-6),
    # Informational: passes although past its tolerance; not the worst of its cell.
    _row(backend="numpy", mode="eager", check="fd_forward", error=1.0, tolerance=1e-6),
    _row(check="forward", error=0.0),
    _row(check="vjp", error=3e-6),
    _row(check="vjp", error=9e-14, tolerance=1e-12, dtype="float64"),  # 0.09 of its tolerance.
    _row(mode="eager", error=1e-7),
    _row(mode="eager", error=0.5, ok=False, dtype="float64", note="dx differs"),
    _row(mode="eager", error=2.0, ok=False, device="cpu:1"),  # The worst of the two failures.
    _row(mode="export", check="skipped", error=None, tolerance=None, note="unsupported"),
    _row(params="alpha=0.1", mode="special", check="special", error=0.0),
    _row(params="alpha=0.1", backend="tensorflow", mode="graph", error=None, ok=False,
         note="boom"),
]


def _report(rows=ROWS):
  return Report(list(rows), 1.5, {"python": "3.11"})


def test_grid_lines_and_columns_come_from_the_rows():
  g = grid.grid(ROWS)
  assert g.lines == [("relu", "-"), ("relu", "alpha=0.1")]
  assert g.columns == [("numpy", "eager"), ("jax", "jit"), ("jax", "eager"), ("jax", "export"),
                       ("jax", "special"), ("tensorflow", "graph")]


def test_grid_cells():
  g = grid.grid(ROWS)
  cell = lambda params, backend, mode: g.cell(("relu", params), (backend, mode))
  numpy = cell("-", "numpy", "eager")
  assert numpy.text() == "ok 2.0e-11" and numpy.count == 2
  jit = cell("-", "jax", "jit")  # float32 and float64 rows: worst against its tolerance.
  assert jit.status == "ok" and jit.worst.error == 3e-6 and jit.text() == "ok 3.0e-06"
  eager = cell("-", "jax", "eager")  # Several dtypes and devices: the worst failure.
  assert eager.text() == "FAIL 2.0e+00" and eager.worst.device == "cpu:1"
  assert "cpu:1" in eager.detail() and eager.count == 3
  assert cell("-", "jax", "export").text() == "skipped"
  assert cell("alpha=0.1", "jax", "special").text() == "ok 0"
  assert cell("alpha=0.1", "tensorflow", "graph").text() == "FAIL -"  # Raised: no error.
  assert cell("alpha=0.1", "numpy", "eager") is None


def test_a_cell_with_skipped_and_passing_rows_is_ok():
  cell = grid.summarize([_row(check="skipped", error=None, tolerance=None), _row(error=4e-6)])
  assert cell.status == "ok" and cell.text() == "ok 4.0e-06"


def test_a_declared_gradient_cell_says_declared_without_an_error():
  declared = _row(backend="numpy", mode="-", check="declared", error=1.4, tolerance=None)
  cell = grid.summarize([declared])
  assert cell.status == "declared" and cell.text() == "declared" and cell.worst is declared
  assert "error 1.4e+00" in cell.detail()  # The tooltip still names the row.
  # Beside a row that verifies something, the declared row is informational.
  cell = grid.summarize([declared, _row(backend="numpy", mode="-", check="fd", error=2e-9)])
  assert cell.text() == "ok 2.0e-09"


def test_text_report_order():
  text = grid.text_report(_report())
  lines = text.splitlines()
  assert lines[1].split() == ["numpy", "jax", "tensorflow"]
  assert lines[2].split() == ["op", "params", "eager", "jit", "eager", "export", "special",
                              "graph"]
  assert lines[3].split() == ["relu", "-", "ok", "2.0e-11", "ok", "3.0e-06", "FAIL", "2.0e+00",
                              "skipped", "-", "-"]
  assert lines[4].split() == ["relu", "alpha=0.1", "-", "-", "-", "-", "ok", "0", "FAIL", "-"]
  failing = text.index("failing rows:")
  assert "every row:" not in text and lines[-1].startswith("crossgrad cross-check: 11 checks")
  assert text[failing:].count("FAIL") == 3
  everything = grid.text_report(_report(), all_rows=True)
  assert everything.index("failing rows:") < everything.index("every row:")
  assert everything.count("\nrelu ") == 2 + 3 + len(ROWS)
  assert "failing rows: none" in grid.text_report(_report(ROWS[:4]))



def _wide_rows():
  """Three backends of four modes, cell i (from 1) ``ok`` with error i * 1e-9."""
  return [_row(op="leaky_relu", params="alpha=0.01", backend=backend, mode=mode,
               error=(4 * b + m + 1) * 1e-9)
          for b, backend in enumerate(("tensorflow", "jax", "torch"))
          for m, mode in enumerate(("eager", "graph", "jit", "vectorized_map"))]


def test_a_wide_grid_comes_in_blocks_of_whole_backends():
  text = grid.grid_text(grid.grid(_wide_rows()), width=130)
  # Unwrapped: op and params (10 wide each), 12 columns of 10 (14 under vectorized_map, the
  # last one's padding stripped), 2 spaces apart: 22 + 12 * 12 + 3 * 4 - 4.
  assert len(grid.grid_text(grid.grid(_wide_rows()), width=None).splitlines()[2]) == 174
  blocks = [block.splitlines() for block in text.split("\n\n")]
  assert all(len(line) <= 130 for block in blocks for line in block)
  assert [block[0].split() for block in blocks] == [["tensorflow", "jax"], ["torch"]]
  three = grid.grid_text(grid.grid(_wide_rows()), width=100).split("\n\n")
  assert [block.split()[0] for block in three] == ["tensorflow", "jax", "torch"]
  assert all(block[1].split()[:2] == ["op", "params"] for block in blocks)
  cells = [cell for block in blocks for cell in re.findall(r"ok (\S+)", block[2])]
  assert cells == [f"{i * 1e-9:.1e}" for i in range(1, 13)]  # Each cell once, in order.


def test_a_backend_wider_than_the_grid_is_split_by_mode():
  text = grid.grid_text(grid.grid(_wide_rows()), width=60)
  blocks = [block.splitlines() for block in text.split("\n\n")]
  assert all(len(line) <= 60 for block in blocks for line in block)
  assert [block[0].split() for block in blocks] == [
      ["tensorflow"], ["tensorflow"], ["jax"], ["jax"], ["torch"], ["torch"]]
  assert [block[1].split()[2:] for block in blocks[:2]] == [
      ["eager", "graph", "jit"], ["vectorized_map"]]


class _Checker(html.parser.HTMLParser):
  """Fails on unbalanced tags; collects tags and text."""

  VOID = {"meta", "br", "hr", "img", "link", "input"}

  def __init__(self):
    super().__init__()
    self.stack, self.tags, self.text = [], set(), []

  def handle_starttag(self, tag, attrs):
    self.tags.add(tag)
    if tag not in self.VOID:
      self.stack.append(tag)

  def handle_endtag(self, tag):
    assert self.stack and self.stack.pop() == tag, f"</{tag}> closes {self.stack[-1:]}"

  def handle_data(self, data):
    self.text.append(data)


def _parse(page):
  checker = _Checker()
  checker.feed(page)
  checker.close()
  assert not checker.stack, f"unclosed: {checker.stack}"
  return checker


def test_html_is_self_contained_well_formed_and_escaped():
  rows = ROWS + [_row(op="t<x>", ok=False, error=1.0, note="got <b>bold</b> & 'quotes'")]
  page = html_report.render(_report(rows))
  parsed = _parse(page)
  assert "script" not in parsed.tags and "<script" not in page.lower()
  assert not re.search(r"https?://", page) and "src=" not in page and "href=" not in page
  assert "<b>" not in page and "&lt;b&gt;bold&lt;/b&gt; &amp; &#x27;quotes&#x27;" in page
  assert "b" not in parsed.tags and "t<x>" in "".join(parsed.text)
  assert page.count("<td class='FAIL'") >= 4  # Grid cells and status cells.
  assert "<details>" in page and "<details open>" in html_report.render(_report(), True)


def test_binary_writes_the_grid_and_the_html(tmp_path):
  out = tmp_path / "report.html"
  done = subprocess.run([sys.executable, "-m", "crossgrad.check", "--ops=leaky_relu",
                         "--backends=jax", "--dtypes=float32", f"--html={out}"],
                        capture_output=True, text=True, timeout=600, check=False)
  assert done.returncode == 0, done.stdout + done.stderr
  lines = done.stdout.splitlines()
  assert lines[2].split() == ["op", "params", "eager", "eager", "jit", "vmap", "scan",
                              "checkpoint", "batched_vjp"]
  assert lines[3].split()[:3] == ["leaky_relu", "alpha=0.2", "ok"]
  assert "failing rows: none" in done.stdout and "every row:" not in done.stdout
  page = out.read_text()
  parsed = _parse(page)
  assert "script" not in parsed.tags and "leaky_relu" in page and "alpha=0.01" in page


def _advisory_report():
  advisory = Row("inv", "-", "tensorflow", "cpu:0", "float32", "eager", "special", None, 1e-5,
                 True, "advisory: raises on special inputs: InvalidArgumentError: x",
                 advisory="raises")
  nan = Row("inv", "-", "jax", "cpu:0", "float32", "jit", "special", 1.0, 1e-5, True,
            "advisory: differs only at special values; worst: dx[0]: 0.0 vs reference nan",
            advisory="NaN vs a number")
  rows = [_row(op="inv", backend="tensorflow", mode="eager"), advisory,
          _row(op="inv", backend="jax"), nan]
  return Report(rows, 1.0, {})


def test_advisory_rows_pass_and_show_in_grid_table_summary_json_and_html():
  report = _advisory_report()
  assert report.ok and not report.failures and len(report.advisories) == 2
  assert [r.status for r in report.rows] == ["ok", "ADVISORY", "ok", "ADVISORY"]
  g = grid.grid(report.rows)
  assert g.cell(("inv", "-"), ("tensorflow", "eager")).text() == "ADVISORY -"
  assert g.cell(("inv", "-"), ("jax", "jit")).text() == "ADVISORY 1.0e+00"
  assert report.summary().endswith(
      "2 advisory at special values (NaN vs a number: 1, raises: 1), 1.0 s")
  text = grid.text_report(report)
  assert "advisory rows (divergences at special values; they do not fail the check):" in text
  assert "failing rows: none" in text
  rows = report.to_dict()["rows"]
  assert [(r["status"], r["advisory"], r["check"]) for r in rows[1::2]] == [
      ("ADVISORY", "raises", "special"), ("ADVISORY", "NaN vs a number", "special")]
  assert '"check": "special"' in report.to_json()  # The kind serialises as its string.
  page = html_report.render(report)
  assert ".ADVISORY {" in page and "<td class='ADVISORY'" in page
  assert "<td class='ADVISORY'>ADVISORY</td>" in page


def test_a_failure_outranks_an_advisory_in_its_cell():
  report = _advisory_report()
  failing = _row(op="inv", backend="jax", error=1.0, ok=False)
  cell = grid.summarize([report.rows[3], failing])
  assert cell.status == "FAIL" and cell.worst is failing
