"""docs/sparse.md: every ```python block runs, in order, in one namespace; a ```text block
right after one is its expected output."""

import contextlib
import io
import pathlib
import re

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "sparse.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def _blocks():
  text = PAGE.read_text()
  blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in BLOCK.finditer(text)]
  for k, (lang, code, _, end) in enumerate(blocks):
    if lang != "python":
      continue
    follows = k + 1 < len(blocks) and blocks[k + 1][0] == "text" and not text[
        end:blocks[k + 1][2]].strip()
    yield code, blocks[k + 1][1] if follows else None


def test_python_snippets_run_and_print_what_the_page_shows():
  namespace = {}
  snippets = list(_blocks())
  assert len(snippets) >= 5
  for code, expected in snippets:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      exec(compile(code, str(PAGE), "exec"), namespace)  # pylint: disable=exec-used
    if expected is not None:
      assert out.getvalue().strip() == expected.strip(), code


def test_no_placeholders_left():
  assert "RESULTS_" not in PAGE.read_text()
