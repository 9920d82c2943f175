"""The developers' guide's size limits: no Python file over 1,000 lines and no function over
80 (decorators excluded), over everything but the legacy fixtures in tests/testdata (code
written like the TF1 projects crossgrad ports, Python 2 included). No exceptions."""

import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SKIP = {".venv", "_build", ".git", "out", "testdata"}
MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 80


def _files() -> list[pathlib.Path]:
  return sorted(p for p in ROOT.rglob("*.py") if not SKIP & set(p.relative_to(ROOT).parts)
                and not p.relative_to(ROOT).parts[0].startswith("bazel-"))


def _oversized(path: str, source: str) -> dict[str, int]:
  """``{"path": lines}`` for a file over the limit and ``{"path:function": lines}`` for each
  function (methods and nested ones included) over it."""
  found = {}
  lines = len(source.splitlines())
  if lines > MAX_FILE_LINES:
    found[path] = lines
  for node in ast.walk(ast.parse(source)):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      length = node.end_lineno - node.lineno + 1
      if length > MAX_FUNCTION_LINES:
        found[f"{path}:{node.name}"] = length
  return found


@functools.cache
def _all_oversized() -> dict[str, int]:
  found = {}
  for path in _files():
    found.update(_oversized(str(path.relative_to(ROOT)), path.read_text()))
  return found


def test_the_files_were_read():
  names = {str(p.relative_to(ROOT)) for p in _files()}
  assert {"backends/torch/emitter.py", "checker/engine.py", "tests/test_code_size.py"} <= names
  assert not any(n.startswith("tests/testdata/") for n in names)


def test_no_file_or_function_over_the_limits():
  over = _all_oversized()
  assert not over, f"split these (lines): {over}"


def test_the_limits_catch_a_planted_long_function_and_file():
  body = "".join(f"  x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
  assert _oversized("f.py", f"def f():\n{body}") == {}
  assert _oversized("f.py", f"def f():\n{body}  x = 0\n") == {"f.py:f": MAX_FUNCTION_LINES + 1}
  method = "class C:\n  def m(self):\n" + "".join(
      f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
  assert _oversized("f.py", method) == {"f.py:m": MAX_FUNCTION_LINES + 1}
  long_file = "x = 0\n" * (MAX_FILE_LINES + 1)
  assert _oversized("f.py", long_file) == {"f.py": MAX_FILE_LINES + 1}
  assert _oversized("f.py", "x = 0\n" * MAX_FILE_LINES) == {}
