"""The built wheel is the tree: it holds every module, installs with no checkout on the path,
imports every module it holds, and runs the check of one op from an empty folder.

The wheel is built offline from a copy of the tree (no stale build folder), installed with
``pip install --target`` and run with ``python -S``: no ``.pth`` file runs, so the editable
install of the checkout (a finder a ``.pth`` file starts) stays out, and the frameworks come
from the environment's site-packages as plain path entries.
"""

import email
import json
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOT_IN_THE_TREE = (".git", ".venv", "_build", "out", ".pytest_cache", "__pycache__",
                   "*.egg-info", "bazel-*")
NOT_SHIPPED = {"tests", "tools"}


def _tree_modules() -> set[str]:
  """The package's files as the wheel names them (``crossgrad/checker/main.py``)."""
  return {"crossgrad/" + str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
          if not (set(p.relative_to(ROOT).parts[:-1]) & (NOT_SHIPPED | {".git", ".venv",
                                                                         "_build", "out"}))
          and not p.relative_to(ROOT).parts[0].startswith("bazel-")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
  work = tmp_path_factory.mktemp("wheel")
  shutil.copytree(ROOT, work / "src", ignore=shutil.ignore_patterns(*NOT_IN_THE_TREE))
  subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                  "-q", "-w", str(work / "dist"), str(work / "src")], check=True, timeout=300)
  (built,) = (work / "dist").glob("crossgrad-*.whl")
  return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> pathlib.Path:
  site = tmp_path_factory.mktemp("site")
  subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                  str(site), str(wheel)], check=True, timeout=300)
  return site


def _run(installed: pathlib.Path, cwd: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
  """``python -S *args`` in ``cwd`` with the installed wheel first on the path, then the
  environment's site-packages (its ``.pth`` files unread)."""
  deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
  home = cwd.parent / f"{cwd.name}_home"  # Where the frameworks keep their settings.
  home.mkdir(exist_ok=True)
  env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TF_CPP_MIN_LOG_LEVEL": "3",
         "PYTHONPATH": ":".join([str(installed), *deps])}
  return subprocess.run([sys.executable, "-S", *args], cwd=cwd, env=env, capture_output=True,
                        text=True, timeout=600, check=False)


def test_the_wheel_holds_every_module_and_no_test(wheel):
  names = set(zipfile.ZipFile(wheel).namelist())
  shipped = {n for n in names if n.startswith("crossgrad/") and n.endswith(".py")}
  tree = _tree_modules()
  assert "crossgrad/distributed/launch.py" in tree and len(tree) > 150
  missing = sorted(tree - shipped)
  assert not missing, f"add their packages to pyproject.toml's packages: {missing}"
  assert not shipped - tree, sorted(shipped - tree)
  assert {"crossgrad/py.typed", "crossgrad-0.1.0.dist-info/licenses/LICENSE"} <= names


def test_the_wheel_metadata(wheel):
  with zipfile.ZipFile(wheel) as archive:
    metadata = email.message_from_bytes(archive.read("crossgrad-0.1.0.dist-info/METADATA"))
    license_text = archive.read("crossgrad-0.1.0.dist-info/licenses/LICENSE").decode()
  assert metadata["License-Expression"] == "Apache-2.0"
  assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
  # numpy>=2.3, a dependency, needs Python 3.11.
  assert metadata["Requires-Python"] == ">=3.11"
  assert "numpy>=2.3" in metadata.get_all("Requires-Dist")
  assert "Typing :: Typed" in metadata.get_all("Classifier")


@pytest.fixture(scope="module")
def imported_and_checked(installed, tmp_path_factory):
  """One process, from an empty folder: imports every module of the tree from the installed
  wheel, then runs ``python -m crossgrad.check`` on one op (imports are paid once)."""
  modules = sorted(str(pathlib.Path(n).with_suffix("")).replace("/", ".")
                   .removesuffix(".__init__") for n in _tree_modules()
                   if not n.endswith("__main__.py"))
  empty = tmp_path_factory.mktemp("empty")
  argv = ["crossgrad.check", "--ops=leaky_relu", "--backends=torch", "--dtypes=float32",
          "--modes=eager", "--jobs=1", f"--json={empty / 'rows.json'}"]
  code = ("import importlib, runpy, sys\n"
          f"for name in {modules!r}:\n"
          "  module = importlib.import_module(name)\n"
          f"  assert module.__file__.startswith({str(installed)!r}), module.__file__\n"
          "print('imported', flush=True)\n"
          f"sys.argv = {argv!r}\n"
          "runpy.run_module('crossgrad.check', run_name='__main__', alter_sys=True)\n")
  return _run(installed, empty, "-c", code), empty


def test_every_module_imports_from_the_installed_wheel(imported_and_checked):
  done, _ = imported_and_checked
  assert done.stdout.startswith("imported\n"), done.stderr[-3000:]


def test_the_installed_wheel_checks_an_op_from_an_empty_folder(imported_and_checked):
  done, folder = imported_and_checked
  assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
  report = json.loads((folder / "rows.json").read_text())
  assert report["ok"] and {(r["op"], r["backend"]) for r in report["rows"]} == {
      ("leaky_relu", "numpy"), ("leaky_relu", "torch")}


def test_the_installed_wheel_has_a_version(installed, wheel, tmp_path):
  version = wheel.name.split("-")[1]
  for args in (["-m", "crossgrad", "--version"],
               [str(installed / "bin" / "crossgrad-check"), "--version"]):
    done = _run(installed, tmp_path, *args)
    assert (done.returncode, done.stdout) == (0, f"crossgrad {version}\n"), done
