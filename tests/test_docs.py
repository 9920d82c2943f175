"""Every ```python block of docs/*.md runs, in order per page, in one namespace per page;
every ```bash block runs in a temporary directory."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(page: pathlib.Path, language: str) -> list[str]:
  """The page's fenced blocks of ``language``, in order."""
  return [body for lang, body in _BLOCK.findall(page.read_text()) if lang == language]


def run_python(page: pathlib.Path) -> dict:
  """Runs the page's python blocks in one namespace; returns it."""
  # pylint: disable=exec-used
  namespace = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
  for index, body in enumerate(blocks(page, "python")):
    exec(compile(body, f"{page.name} python block {index + 1}", "exec"), namespace)
  return namespace


PAGES = sorted(DOCS.glob("*.md"))


def test_the_docs_have_pages():
  assert PAGES and all(blocks(p, "python") or blocks(p, "bash") or blocks(p, "text")
                       for p in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_blocks_run(page):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  run_python(page)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_bash_blocks_run(page, tmp_path):
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
         "PYTHONPATH": os.pathsep.join(filter(None, [str(DOCS.parent.parent),
                                                     os.environ.get("PYTHONPATH")])),
         "PATH": os.pathsep.join([str(pathlib.Path(sys.executable).parent),
                                  os.environ.get("PATH", "")])}
  for body in blocks(page, "bash"):
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{page.name}:\n{body}\n{done.stdout}\n{done.stderr}"
