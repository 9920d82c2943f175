"""Which definitions a source file holds: the file imported (porting runs it), then each
framework's source module (`SOURCES`) that the file's imports call for."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from typing import Any

from crossgrad.checker import selection
from crossgrad.port import translate
from crossgrad.port.definition import Definition
from crossgrad.registry.errors import CrossgradError

# Framework -> the module whose ``find(tree, module, path)`` returns its definitions.
SOURCES = {"torch": "crossgrad.port.torch_source", "jax": "crossgrad.port.jax_source",
           "tensorflow": "crossgrad.port.tensorflow_source"}


def frameworks(tree: ast.Module) -> list[str]:
  """The frameworks of `SOURCES` the module imports (and crossgrad has a source for)."""
  roots = {name.split(".")[0] for name in translate.aliases(tree).values()}
  return [f for f in SOURCES if f in roots and importlib.util.find_spec(SOURCES[f])]


def definitions(path: str, *, module: Any = None) -> tuple[Any, list[Definition]]:
  """(the imported module, its definitions, translated) for the file at ``path``."""
  try:
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read(), filename=path)
  except (OSError, SyntaxError, UnicodeDecodeError) as e:
    raise CrossgradError("cannot read the source file", argument=path,
                         actual=f"{type(e).__name__}: {e}") from None
  if module is None:
    module = selection.load_module(path, argument=path)
  found = []
  for framework in frameworks(tree):
    found += importlib.import_module(SOURCES[framework]).find(tree, module, path)
  return module, found


def load_samples(path: str | None) -> Any:
  """The ``--samples`` file as a module (its ``SAMPLES`` and ``GRADIENTS``), or None."""
  return None if path is None else selection.load_module(path, argument="--samples")

