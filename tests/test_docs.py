"""Every code block in README.md and docs/ runs, so the docs cannot rot.

README's first ```bash block (install, then the cross-check) is what CI runs
(`.ci/run`), so it is left out here. Per page, in order: ```python blocks run in one namespace (a page reads like one
session); ```bash blocks run with bash in a fresh temporary directory, with this
interpreter's folder first on PATH; ```text blocks (output, file layouts) never run.
Any other fence language, and an unclosed fence, fail the test.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

import crossgrad as cg
from crossgrad.backends.common import base

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
RUNS = {"python", "bash"}
NEVER_RUNS = {"text"}
_FENCE = re.compile(r"^(\s*)```(.*)$")


def blocks(text: str, name: str) -> list[tuple[str, int, str]]:
  """``(language, first line number, code)`` of every fenced block; bad fences raise."""
  found, open_at, language, lines = [], None, None, []
  for number, line in enumerate(text.splitlines(), 1):
    match = _FENCE.match(line)
    if match is None:
      if open_at is not None:
        lines.append(line)
      continue
    if open_at is None:
      language, open_at, lines = match.group(2).strip(), number, []
      if language not in RUNS | NEVER_RUNS:
        raise AssertionError(f"{name}:{number}: fence language {language!r} is not one of "
                             f"{sorted(RUNS | NEVER_RUNS)}")
    elif match.group(2).strip():
      raise AssertionError(f"{name}:{number}: a fence opens inside the block opened at line "
                           f"{open_at}")
    else:
      found.append((language, open_at, "\n".join(lines)))
      open_at = None
  if open_at is not None:
    raise AssertionError(f"{name}:{open_at}: fence never closed")
  return found


def run_page(path: pathlib.Path, tmp_path: pathlib.Path) -> int:
  """Runs the page's blocks; returns how many ran."""
  namespace = {"__name__": f"docs_{path.stem}"}
  ran = 0
  env = dict(os.environ, PATH=f"{pathlib.Path(sys.executable).parent}:{os.environ['PATH']}")
  found = blocks(path.read_text(), path.name)
  if path == ROOT / "README.md":  # The install commands: .ci/run runs them.
    first_bash = next(i for i, (language, _, _) in enumerate(found) if language == "bash")
    found = found[:first_bash] + found[first_bash + 1:]
  for language, line, code in found:
    if language == "python":
      exec(compile(code, f"{path.name}:{line}", "exec"), namespace)  # pylint: disable=exec-used
    elif language == "bash":
      workdir = tmp_path / f"block{line}"
      workdir.mkdir()
      done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=workdir, env=env,
                            capture_output=True, text=True, timeout=600, check=False)
      assert done.returncode == 0, f"{path.name}:{line}: exit {done.returncode}\n{done.stderr}"
    else:
      continue
    ran += 1
  return ran


@pytest.fixture(name="page_registrations")
def _page_registrations():
  """The ops and backends a page registers are the page's own: removed after it, so each
  page runs as a reader's fresh session would (never on another page's ops), whichever
  pages ran before it in this process."""
  ops, backends = set(cg.names()), set(base.names())
  yield
  for name in set(cg.names()) - ops:
    cg.unregister(name)
  for name in set(base.names()) - backends:
    base.unregister(name)


@pytest.mark.usefixtures("page_registrations")
@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_runs(path, tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  run_page(path, tmp_path)


def test_pages_exist():
  assert len(PAGES) > 1, "docs/ has no pages"


def test_unbalanced_fences_fail():
  with pytest.raises(AssertionError, match="never closed"):
    blocks("text\n```python\nx = 1\n", "page.md")
  with pytest.raises(AssertionError, match="opens inside"):
    blocks("```python\nx = 1\n```bash\n```\n", "page.md")
  with pytest.raises(AssertionError, match="fence language"):
    blocks("```pyhton\nx = 1\n```\n", "page.md")


def test_a_failing_snippet_fails(tmp_path):
  page = tmp_path / "page.md"
  page.write_text("```python\nx = 1\n```\n\n```python\nassert x == 2\n```\n")
  with pytest.raises(AssertionError):
    run_page(page, tmp_path)
  page.write_text("```bash\nfalse\n```\n")
  with pytest.raises(AssertionError, match="exit 1"):
    run_page(page, tmp_path)


def test_op_pages_match_the_definitions():
  done = subprocess.run([sys.executable, str(ROOT / "tools" / "op_pages.py"), "--check"],
                        capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stderr


def test_the_op_page_check_sees_a_stale_page(tmp_path):
  done = subprocess.run([sys.executable, str(ROOT / "tools" / "op_pages.py"), "--check",
                         f"--out={tmp_path}"], capture_output=True, text=True, check=False)
  assert done.returncode == 1 and "leaky_relu.md" in done.stderr


def test_readme_is_short():
  lines = (ROOT / "README.md").read_text().splitlines()
  assert len(lines) <= 200, f"README.md has {len(lines)} lines; details belong in docs/"


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_relative_links_resolve(path):
  missing = [link for link in _LINK.findall(path.read_text())
             if not link.startswith(("http://", "https://"))
             and not (path.parent / link).exists()]
  assert not missing, f"{path.name} links to missing files: {missing}"
