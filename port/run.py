"""Porting files and objects: discovery, the written module, its proof, per source file."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, Sequence

from crossgrad.port import definition, discover, prove
from crossgrad.port.prove import CheckSettings, Result
from crossgrad.registry.errors import CrossgradError


def files(paths: Sequence[str], *, out_dir: str, samples_path: str | None = None,
          settings: CheckSettings = CheckSettings()) -> list[Result]:
  """Every definition in the source files at ``paths``, ported to ``out_dir``."""
  samples = discover.load_samples(samples_path)
  results = []
  with definition.samples_from(samples):
    for path in paths:
      module, found = discover.definitions(path)
      results += prove.prove(found, source_path=path, out_dir=out_dir,
                             declared=definition.gradients(module),
                             samples_path=samples_path, settings=settings)
  return results


def one(obj: Any, *, out_dir: str | None = None,
        settings: CheckSettings = CheckSettings()) -> Result:
  """``obj`` (a ``torch.autograd.Function`` subclass, a ``jax.custom_vjp`` or
  ``custom_jvp`` function, a ``tf.custom_gradient`` function) ported and proved; the
  other definitions of its module are left alone. ``out_dir`` defaults to a new
  temporary folder."""
  name, module = _name_and_module(obj)
  path = getattr(module, "__file__", None)
  if not path or not path.endswith(".py"):
    raise CrossgradError("cannot find the source file of the object", argument="obj",
                         expected="a class or function defined in a .py file",
                         actual=repr(obj))
  _, found = discover.definitions(path, module=module)
  found = [d for d in found if d.name == name]
  if not found:
    raise CrossgradError("not a custom-gradient definition crossgrad-port can find",
                         argument="obj", actual=f"{name} in {path}",
                         expected="a torch.autograd.Function subclass, a jax.custom_vjp or "
                                  "custom_jvp function, or a tf.custom_gradient function, "
                                  "at the top level of its module")
  out_dir = out_dir or tempfile.mkdtemp(prefix="crossgrad-port-")
  (result,) = prove.prove(found, source_path=path, out_dir=os.path.join(out_dir),
                          declared=definition.gradients(module), settings=settings)
  return result


def _name_and_module(obj: Any) -> tuple[str, Any]:
  for candidate in (obj, getattr(obj, "fun", None), getattr(obj, "__wrapped__", None)):
    name = getattr(candidate, "__name__", None)
    module = sys.modules.get(getattr(candidate, "__module__", None) or "")
    if name and module is not None:
      return name, module
  raise CrossgradError("cannot tell where the object is defined", argument="obj",
                       actual=repr(obj), expected="a class or function of a module")


