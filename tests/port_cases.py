"""Shared by the JAX and TensorFlow porting tests: a corpus file ported and proved once
(float32), its results by definition name."""

import ast
import importlib
import os
import sys

from crossgrad.port import discover, prove

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "port_corpus")


def port_file(stem: str, out_dir: str, modes=None) -> dict:
  """{name: `prove.Result`} of every definition in ``port_corpus/<stem>.py``, checked in
  ``modes`` (None: eager and the framework's compiled mode)."""
  path = os.path.join(CORPUS, f"{stem}.py")
  if CORPUS not in sys.path:
    sys.path.insert(0, CORPUS)
  module = importlib.import_module(stem)
  _, found = discover.definitions(path, module=module)
  results = prove.prove(found, source_path=path, out_dir=out_dir,
                        declared=getattr(module, "GRADIENTS", {}),
                        settings=prove.CheckSettings(dtypes=("float32",), modes=modes))
  return {r.definition.name: r for r in results}


def definitions(stem: str) -> list[str]:
  """The top-level functions of a corpus file decorated with (or assigned) a custom_vjp,
  custom_jvp or custom_gradient, and its Function subclasses: what the port must find,
  read from the text."""
  with open(os.path.join(CORPUS, f"{stem}.py"), encoding="utf-8") as f:
    tree = ast.parse(f.read())
  decorated = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and any(
      "custom_" in ast.unparse(dec) for dec in n.decorator_list)]
  assigned = [n.targets[0].id for n in tree.body if isinstance(n, ast.Assign)
              and "custom_" in ast.unparse(n.value)]  # f = jax.custom_vjp(fn)
  classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and any(
      ast.unparse(b).endswith("Function") for b in n.bases)]  # torch.autograd.Function
  return decorated + assigned + classes


def line(stem: str, text: str, after: int = 0) -> int:
  """The first line of ``port_corpus/<stem>.py`` after line ``after`` holding ``text``."""
  with open(os.path.join(CORPUS, f"{stem}.py"), encoding="utf-8") as f:
    return next(k for k, row in enumerate(f, 1) if k > after and text in row)
