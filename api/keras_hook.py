"""Makes crossgrad's Keras classes loadable by name as soon as Keras is imported.

`keras.models.load_model` finds ``crossgrad>OpLayer`` (and the `crossgrad.layers`) only once
they are registered, yet ``import crossgrad`` imports no framework. So `install` registers
them at once where Keras is already imported, and otherwise right after Keras' own import
finishes (a one-shot finder on `sys.meta_path`).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys


class _AfterKeras:  # A `sys.meta_path` finder (not an importlib.abc one: its import costs).
  """Imports ``module`` after the ``keras`` package's own import, then removes itself."""

  def __init__(self, module: str):
    self.module = module

  def find_spec(self, fullname, path, target=None):
    del target
    if fullname != "keras":
      return None
    sys.meta_path.remove(self)
    spec = importlib.machinery.PathFinder.find_spec(fullname, path)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
      return spec
    run_keras = spec.loader.exec_module

    def exec_module(module):
      run_keras(module)
      importlib.import_module(self.module)

    spec.loader.exec_module = exec_module
    return spec


def install(module: str) -> None:
  """Imports ``module`` (the one registering the Keras classes: the package root names
  `crossgrad.layers`, which sits above this layer) now if Keras is imported, else once it
  is (never if it is not installed)."""
  if "keras" in sys.modules:
    importlib.import_module(module)
  elif importlib.util.find_spec("keras") is not None:
    sys.meta_path.insert(0, _AfterKeras(module))
