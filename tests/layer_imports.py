"""Bazel's layering check: imports every module of one package (the argument) in a target
whose runfiles hold only that package's (or root module's) py_library and its deps (BUILD's ``layer_*``
tests), so a module importing a package above its layer fails to import."""

import importlib
import os
import sys


def main(package: str) -> None:
  root = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)  # Unresolved.
  module_file = os.path.join(root, package + ".py")
  modules = [f"crossgrad.{package}"] if os.path.isfile(module_file) else []
  for folder, _, files in os.walk(os.path.join(root, package)):
    parts = os.path.relpath(folder, root).split(os.sep)
    modules += [".".join(["crossgrad", *parts] + ([] if f == "__init__.py" else [f[:-3]]))
                for f in sorted(files) if f.endswith(".py")]
  assert modules, f"no modules in {package}"
  for module in modules:
    importlib.import_module(module)
  print(f"{package}: imported {len(modules)} modules")


if __name__ == "__main__":
  main(sys.argv[1])
