"""One flag idiom: programs parse their command line with absl flags, never argparse, and
each binary's ``--help`` lists the flags it defines."""

import ast
import json
import os
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# tests/testdata holds legacy TF1 programs (some Python 2), read as data, not run.
SKIP_DIRS = {".venv", "_build", "tools", ".git", "out", "testdata"}
OTHER_PARSERS = {"argparse", "optparse", "getopt"}


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
               if _other_parsers(p)}
  assert not offenders, f"use absl.flags and absl.app instead: {offenders}"


def test_the_check_sees_lazy_and_from_imports(tmp_path):
  module = tmp_path / "m.py"
  module.write_text("def main():\n  from argparse import ArgumentParser\n  import getopt\n")
  assert _other_parsers(module) == {"argparse", "getopt"}
  module.write_text("from absl import flags\nimport argparse_helpers\n")
  assert not _other_parsers(module)


# The binaries (`python -m crossgrad.NAME`) and the file defining each one's flags.
_STARTS = re.compile(r"usage\.(run|console)\(main")
BINARIES = {"check": "checker/main.py",
            **{f"{package}.{p.stem}": f"{package}/{p.name}" for package in ("tf1", "benchmarks", "port")
               for p in sorted((ROOT / package).glob("*.py")) if _STARTS.search(p.read_text())},
            **{f"tf1.{p.parent.name}": f"tf1/{p.parent.name}/__main__.py"  # Packages.
               for p in sorted((ROOT / "tf1").glob("*/__main__.py"))}}
# Flags the shared definers of `crossgrad.benchmarks.timing` make.
SHARED = {"define_common_flags": ("quick", "json")}


def _defined_flags(path: pathlib.Path) -> set[str]:
  """Names of the flags a file defines: ``flags.DEFINE_*("name", ...)``,
  ``timing.define_ints("name", ...)`` and the flags of `timing.define_common_flags`."""
  found = set()
  for node in ast.walk(ast.parse(path.read_text())):
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
      continue
    name, args = node.func.attr, node.args
    if (name.startswith("DEFINE_") or name == "define_ints") and args and isinstance(
        args[0], ast.Constant):
      found.add(args[0].value)
    found.update(SHARED.get(name, ()))
  return found


def test_every_binary_is_found_with_its_flags():
  assert {"check", "tf1.port_check", "tf1.scan", "benchmarks.overhead"} <= set(BINARIES)
  assert {"ops", "backends", "dtypes"} <= _defined_flags(ROOT / BINARIES["check"])
  assert {"quick", "json", "sizes"} <= _defined_flags(ROOT / BINARIES["benchmarks.tf1_idiom"])


# Console scripts (pyproject.toml): name -> "module:function".
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def _env():
  return dict(os.environ, PYTHONPATH=os.pathsep.join(
      [str(ROOT.parent)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))


def _help(command: list[str]) -> str:
  result = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=300,
                          env=_env(), check=False)
  return result.stdout + result.stderr


def _missing(listed: str, source: str) -> list[str]:
  defined = _defined_flags(ROOT / source)
  assert defined, source
  return sorted(f for f in defined if f"--{f}:" not in listed and f"--[no]{f}:" not in listed)


@pytest.fixture(scope="module")
def helps():
  """``{binary: what its --help prints}``, each binary run as ``python -m crossgrad.<binary>
  --help`` runs it, in a child of tests/usage_errors_worker.py (which imports the frameworks
  once for all of them, where each binary's own process would import them again)."""
  cases = [[f"crossgrad.{binary}", ["--help"]] for binary in sorted(BINARIES)]
  done = subprocess.run([sys.executable, str(ROOT / "tests" / "usage_errors_worker.py"),
                         json.dumps(cases)], capture_output=True, text=True, timeout=600,
                        env=dict(_env(), TF_CPP_MIN_LOG_LEVEL="3"), check=True)
  return {r["module"].removeprefix("crossgrad."): r for r in json.loads(done.stdout)}


@pytest.mark.parametrize("binary", sorted(BINARIES))
def test_help_lists_the_binarys_own_flags(helps, binary):
  """absl's --help lists only the main module's key flags: a binary whose flags live in a
  library module (crossgrad.checker.main, benchmarks/timing.py) must adopt them."""
  listed = helps[binary]["output"]
  missing = _missing(listed, BINARIES[binary])
  assert not missing, f"{binary} --help does not list {missing}:\n{listed[-2000:]}"
  assert helps[binary]["status"] == 0, f"{binary} --help exits {helps[binary]['status']}"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_console_script_help_lists_its_flags(script):
  """As an installed console script runs it: the main module is the script, not the
  module that defines the flags."""
  module, function = SCRIPTS[script].split(":")
  code = (f"import sys; sys.argv[0] = {script!r}; from {module} import {function}; "
          f"sys.exit({function}())")
  listed = _help([sys.executable, "-c", code])
  source = BINARIES[module.removeprefix("crossgrad.").removesuffix(".__main__")] \
      if module != "crossgrad.checker.main" \
      else BINARIES["check"]
  missing = _missing(listed, source)
  assert not missing, f"{script} --help does not list {missing}:\n{listed[-2000:]}"
