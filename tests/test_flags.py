"""One flag idiom: programs parse their command line with absl flags, never argparse."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
# tests/testdata holds legacy TF1 programs (some Python 2), read as data, not run.
SKIP_DIRS = {".venv", "_build", "tools", ".git", "out", "testdata"}
OTHER_PARSERS = {"argparse", "optparse", "getopt"}
# Pending: being rewritten to absl flags in a parallel branch (issue 15); drop each entry
# when its file moves to absl (the last test fails until then, as a reminder).
PENDING: set[str] = set()


def _other_parsers(path):
  """The non-absl command-line parsers a module imports, lazy imports included."""
  found = set()
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import):
      found |= {a.name.split(".")[0] for a in node.names}
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      found.add(node.module.split(".")[0])
  return found & OTHER_PARSERS


def _modules():
  return {str(p.relative_to(ROOT)): p for p in ROOT.rglob("*.py")
          if not SKIP_DIRS & set(p.relative_to(ROOT).parts)
          and not p.relative_to(ROOT).parts[0].startswith("bazel-")}


def test_no_module_imports_argparse():
  offenders = {name: sorted(_other_parsers(p)) for name, p in _modules().items()
               if name not in PENDING and _other_parsers(p)}
  assert not offenders, f"use absl.flags and absl.app instead: {offenders}"


def test_the_check_sees_lazy_and_from_imports(tmp_path):
  module = tmp_path / "m.py"
  module.write_text("def main():\n  from argparse import ArgumentParser\n  import getopt\n")
  assert _other_parsers(module) == {"argparse", "getopt"}
  module.write_text("from absl import flags\nimport argparse_helpers\n")
  assert not _other_parsers(module)


def test_pending_files_still_need_their_exemption():
  modules = _modules()
  for name in sorted(PENDING):
    assert name in modules and _other_parsers(modules[name]), (
        f"{name} no longer imports argparse: remove it from PENDING")
