"""``import crossgrad.torch`` (and ``.tensorflow``, ``.jax``, ``.keras``) works as
``crossgrad.torch`` does: the names are attributes the package loads on first access
(``crossgrad.__getattr__``), with no file of their own, so a finder on `sys.meta_path`
answers the import with the module that attribute access returns."""

from __future__ import annotations

import importlib.machinery
import sys
from typing import Iterable


class _AttributeLoader:  # Duck-typed loader and finder: importlib.abc's import costs.
  """Loads ``crossgrad.<name>`` as ``getattr(crossgrad, name)``."""

  def create_module(self, spec):
    return getattr(sys.modules["crossgrad"], spec.name.rpartition(".")[2])

  def exec_module(self, module):
    del module  # Loaded (and run) already by the attribute access.


class _Finder:

  def __init__(self, names: Iterable[str]):
    self.names = frozenset(f"crossgrad.{name}" for name in names)

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname not in self.names:
      return None
    return importlib.machinery.ModuleSpec(fullname, _AttributeLoader())


def install(names: Iterable[str]) -> None:
  """Makes ``import crossgrad.<name>`` work for each of ``names`` (once per process)."""
  if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
    sys.meta_path.append(_Finder(names))
