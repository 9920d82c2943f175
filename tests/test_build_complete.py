"""BUILD stays complete: every module belongs to a target, every test file has a py_test."""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
SKIP_DIRS = {".venv", "_build", "tools", ".git", "out"}


def _calls(tree, name):
  return [n for n in ast.walk(tree)
          if isinstance(n, ast.Call) and getattr(n.func, "id", None) == name]


def _keyword(call, name):
  return next((k.value for k in call.keywords if k.arg == name), None)


def _strings(node):
  return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
          and isinstance(n.value, str)] if node is not None else []


def _glob_matches(pattern, path):
  """Bazel glob semantics: "*" stays within a directory, "**/" spans zero or more."""
  regex = "".join("(?:.*/)?" if part == "**/" else "[^/]*" if part == "*" else re.escape(part)
                  for part in re.split(r"(\*\*/|\*)", pattern))
  return re.fullmatch(regex, path) is not None


def _binaries(tree):
  """BUILD's ``BINARIES`` list, ``(name, main, deps)`` per binary, evaluated (its Starlark
  is Python)."""
  (value,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
              and [getattr(t, "id", None) for t in n.targets] == ["BINARIES"]]
  return eval(compile(ast.Expression(value), "BUILD", "eval"), {})  # pylint: disable=eval-used


def _covered(tree):
  """Files named by the srcs and data of the BUILD targets, globs evaluated on the tree,
  and the binaries' main files."""
  files = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
           if not SKIP_DIRS & set(p.relative_to(ROOT).parts)
           and not p.relative_to(ROOT).parts[0].startswith("bazel-")]
  covered = {main for _, main, _ in _binaries(tree)}
  for rule in ("py_library", "py_test"):
    for call in _calls(tree, rule):
      for field in ("srcs", "data"):
        covered |= _files_named(_keyword(call, field), files)
  return files, covered


def _files_named(srcs, files):
  """The files a srcs/data expression names: its globs and its literal paths."""
  covered = set()
  if srcs is not None:
    for glob in _calls(srcs, "glob"):
      include = _strings(glob.args[0])
      exclude = _strings(_keyword(glob, "exclude"))
      covered |= {f for f in files if any(_glob_matches(p, f) for p in include)
                  and not any(_glob_matches(p, f) for p in exclude)}
  return covered | {s for s in _strings(srcs) if s.endswith(".py") and "*" not in s}


def test_every_python_file_is_in_a_target():
  tree = ast.parse((ROOT / "BUILD").read_text())
  files, covered = _covered(tree)
  # The test comprehension names its sources through the loop variable `src`.
  tests = {f for f in files if _glob_matches("tests/test_*.py", f)}
  missing = sorted(set(files) - covered - tests - {"tests/conftest.py"})
  assert not missing, f"add these to a BUILD target: {missing}"


def test_every_test_file_gets_its_own_py_test():
  tree = ast.parse((ROOT / "BUILD").read_text())
  (comprehension,) = [n for n in ast.walk(tree) if isinstance(n, ast.ListComp)
                      and getattr(getattr(n.elt, "func", None), "id", None) == "py_test"
                      and _calls(n.generators[0].iter, "glob")]
  (generator,) = comprehension.generators
  assert _strings(generator.iter) == ["tests/test_*.py"]
  assert "tests/conftest.py" in _strings(_keyword(comprehension.elt, "data"))
  assert "tests/testdata/**" in _strings(_keyword(comprehension.elt, "data"))


def test_the_check_detects_a_missing_module():
  build = (ROOT / "BUILD").read_text()
  assert 'glob(["registry/**/*.py"])' in build
  tree = ast.parse(build.replace('glob(["registry/**/*.py"])', "glob([])"))
  files, covered = _covered(tree)
  assert "registry/opdef.py" in files and "registry/opdef.py" not in covered
  assert "registry/ops/leaky_relu.py" not in covered
  assert "backends/jax/emitter.py" in covered


def test_binaries_come_from_one_list():
  """One py_binary, in a comprehension over ``BINARIES``; each binary once, its main a
  program (with a ``__main__`` guard) and its deps targets of this BUILD."""
  tree = ast.parse((ROOT / "BUILD").read_text())
  (call,) = _calls(tree, "py_binary")
  assert any(isinstance(n, ast.ListComp) and n.elt is call for n in ast.walk(tree))
  binaries = _binaries(tree)
  names = [name for name, _, _ in binaries]
  assert len(names) == len(set(names)) and {"check", "port_check", "scan"} <= set(names)
  libraries = {":" + _strings(_keyword(c, "name"))[0] for c in _calls(tree, "py_library")}
  for name, main, deps in binaries:
    assert _has_main_guard(ROOT / main), f"{name}: {main} is not a program"
    assert set(deps) <= libraries, f"{name}: unknown deps {set(deps) - libraries}"


def test_the_libraries_mirror_the_layering():
  """Each package's py_library depends on exactly the libraries its modules import (the
  graph tests/test_layering.py reads, less the processes a package starts), so the BUILD
  graph is the layering."""
  import test_layering  # pylint: disable=g-import-not-at-top
  tree = ast.parse((ROOT / "BUILD").read_text())
  deps = {_strings(_keyword(c, "name"))[0]: set(_strings(_keyword(c, "deps")))
          for c in _calls(tree, "py_library")}
  packages, _ = test_layering._graph()  # pylint: disable=protected-access
  for package, imported in packages.items():
    if package in deps:
      imported = imported - test_layering.STARTED.get(package, set())
      assert deps[package] == {":" + p for p in imported if p in deps}, package


def test_bazel_imports_every_package_with_its_deps_only():
  """One ``layer_<package>`` py_test per py_library of the layering."""
  tree = ast.parse((ROOT / "BUILD").read_text())
  (comprehension,) = [n for n in ast.walk(tree) if isinstance(n, ast.ListComp)
                      and isinstance(n.elt, ast.Call)
                      and _strings(_keyword(n.elt, "name")) == ["layer_%s"]]
  import test_layering  # pylint: disable=g-import-not-at-top
  packages, _ = test_layering._graph()  # pylint: disable=protected-access
  # Not the root (__init__.py, check.py, __main__.py), nor the programs on top (examples,
  # benchmarks: each a py_binary, built with its deps).
  assert set(_strings(comprehension.generators[0].iter)) == set(packages) - {
      "crossgrad", "check", "__main__", "examples", "benchmarks"}


def test_ci_runs_the_tagged_tests_of_existing_files():
  """CI's Bazel tests (.ci/run: --test_tag_filters=ci) are the layer_ tests and CI_TESTS; a
  name there that is no test file would drop out of CI silently."""
  tree = ast.parse((ROOT / "BUILD").read_text())
  (ci_tests,) = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and [t.id for t in n.targets] == ["CI_TESTS"]]
  names = _strings(ci_tests)
  assert names and sorted(names) == names
  missing = [n for n in names if not (ROOT / "tests" / f"{n}.py").is_file()]
  assert not missing, f"CI_TESTS names no test file: {missing}"


def test_glob_semantics():
  assert _glob_matches("*.py", "check.py") and not _glob_matches("*.py", "registry/opdef.py")
  assert _glob_matches("registry/**/*.py", "registry/opdef.py")
  assert _glob_matches("registry/**/*.py", "registry/ops/leaky_relu.py")


def _has_main_guard(path):
  """Whether the module runs as a program: it has an ``if __name__ == "__main__":``."""
  tree = ast.parse(path.read_text())
  return any(isinstance(n, ast.If) and isinstance(n.test, ast.Compare)
             and getattr(n.test.left, "id", None) == "__name__" for n in tree.body)


# Programs in benchmarks/ that are no benchmark (run_all.TOOLS), with their binaries' names.
TOOLS = {"run_all": "run_all_benchmarks", "docs_tables": "benchmark_docs_tables",
         "array_api_conformance": "benchmark_array_api_conformance"}


def test_benchmark_binaries_follow_one_naming_rule():
  """Every benchmark program has a py_binary named <module>_benchmark (the tools: as
  `TOOLS` says), and every py_binary of benchmarks/ is named so."""
  tree = ast.parse((ROOT / "BUILD").read_text())
  binaries = {main: name for name, main, _ in _binaries(tree)}
  programs = {f"benchmarks/{p.name}" for p in (ROOT / "benchmarks").glob("*.py")
              if _has_main_guard(p)}
  assert {"benchmarks/run_all.py", "benchmarks/check_cost.py"} <= programs
  assert programs == {main for main in binaries if main.startswith("benchmarks/")}
  for main in programs:
    module = main[len("benchmarks/"):-len(".py")]
    expected = TOOLS.get(module, f"{module}_benchmark")
    assert binaries[main] == expected, f"rename the py_binary of {main} to {expected}"
