"""Definitions -> ``DIR/<stem>_xp.py``: readable ``cg.OpDef`` code the user owns.

One op per definition not refused, with a ``# from FILE:LINE`` comment: its forward and
backward in the op language, the source's helpers and constants they use, its sample
from the source module's ``SAMPLES`` (or ``--samples``), and the original registered as
its framework's kernel ``"original"`` with the modes it cannot run in. Importing the file
imports the source module (once: the one already imported is reused).
"""

from __future__ import annotations

import ast
import os
import re
from typing import Mapping, Sequence

from crossgrad.port.definition import REQUIRED, Definition

ORIGINAL = "original"  # The original's kernel name.
_HEADER = '''"""crossgrad ports of the custom gradients in {file} (crossgrad-port).

Written by crossgrad-port; yours to edit. Importing this file registers each op and, as
its {frameworks} kernel {original!r}, the definition it was ported from, so

  python -m crossgrad.check --module={module}

checks the port against the original in every mode of the original's framework, and the
port in every other framework against the NumPy reference.
"""

import math
import os
import sys

import crossgrad as cg
from crossgrad.checker import selection


def _module(path):
  """The module at ``path`` (relative to this file): the one already imported, else loaded."""
  path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), path))
  return next((m for m in list(sys.modules.values())
               if getattr(m, "__file__", None) == path), None) or selection.load_module(path)


def _sample(samples, name, positions):
  """The inputs of ``samples[name]`` (its arrays, at ``positions``)."""
  if name not in samples:
    def missing(rng):
      raise cg.CrossgradError(
          "no sample: add SAMPLES[" + repr(name) + "] = lambda rng: (args...) to the source "
          "module, or pass crossgrad-port --samples=FILE.py with that dict", op=name,
          argument="sample", hint="NumPy arrays become inputs, Python scalars parameters")
    return missing
  return lambda rng: tuple(samples[name](rng)[k] for k in positions)


source = _module({source!r})
SAMPLES = {samples}
'''


def _relative(path: str, here: str) -> str:
  """``path`` relative to folder ``here`` where that stays near (the output beside its
  source), else absolute."""
  rel = os.path.relpath(os.path.abspath(path), here)
  return os.path.abspath(path) if rel.startswith(os.path.join(os.pardir, os.pardir)) else rel


def op_name(stem: str, d: Definition) -> str:
  return f"{_snake(stem)}.{d.name}"


def _snake(name: str) -> str:
  name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
  return re.sub(r"\W+", "_", name).strip("_").lower()


def _renamed(source: str, name: str) -> str:
  tree = ast.parse(source)
  tree.body[0].name = name
  return ast.unparse(tree)


def module_text(definitions: Sequence[Definition], *, source_path: str, out_path: str,
                gradients: Mapping[str, str], samples_path: str | None = None) -> str:
  """The text of the ``_xp.py`` file for ``definitions`` (refused ones left out);
  ``gradients``: the `OpDef` gradient kind of each by name."""
  here = os.path.dirname(os.path.abspath(out_path))
  stem = os.path.splitext(os.path.basename(source_path))[0]
  rel = _relative(source_path, here)
  samples = ("source.__dict__.get('SAMPLES', {})" if samples_path is None
             else f"_module({_relative(samples_path, here)!r}).SAMPLES")
  kept = [d for d in definitions if not d.refused]
  frameworks = "/".join(sorted({d.framework for d in kept})) or "framework's"
  parts = [_HEADER.format(file=os.path.basename(source_path), frameworks=frameworks,
                          original=ORIGINAL, module=out_path, source=rel, samples=samples)]
  constants = {k: v for d in kept for k, v in d.constants.items()}
  if constants:
    parts.append("\n".join(f"{k} = {v}" for k, v in constants.items()) + "\n")
  helpers = {}
  for d in kept:
    for h in d.helpers:
      helpers.setdefault(ast.parse(h).body[0].name, h)
  parts += [f"\n{h}\n" for h in helpers.values()]
  for d in kept:
    parts.append(_op_text(d, stem, gradients.get(d.name, "exact")))
  return "\n".join(parts)


def _op_text(d: Definition, stem: str, gradient: str) -> str:
  base = _snake(d.name)
  name = op_name(stem, d)
  defaults = {k: None if v is REQUIRED else v for k, v in d.params.items()}
  keywords = "".join(f", {k}={v!r}" for k, v in defaults.items())
  call = ", ".join(d.call_order)
  inputs = ", ".join(d.inputs)
  original = (f"def _{base}_original({inputs}, *{keywords}):\n"
              f"  return source.{d.original}({call})\n") if d.params else (
                  f"def _{base}_original({inputs}):\n  return source.{d.original}({call})\n")
  positions = tuple(k for k, n in enumerate(d.call_order) if n in d.inputs)
  var = base.upper()
  options = [f"name={name!r}", f"forward={base}_forward", f"backward={base}_backward",
             f"gradient={gradient!r}",
             f"sample=_sample(SAMPLES, {d.name!r}, {positions!r})"]
  if d.nondiff:
    options.append(f"nondiff={tuple(d.nondiff)!r}")
  if d.sample_params:
    options.append(f"param_sets=({dict(d.sample_params)!r},)")
  if d.op_unsupported_modes:
    options.append(f"unsupported_modes={dict(d.op_unsupported_modes)!r}")
  options.append(f"doc={f'{d.framework} {d.name} from {os.path.basename(d.file)}:{d.line}'!r}")
  residuals = ", ".join(d.residuals) or "none"
  lines = [
      f"\n# from {os.path.basename(d.file)}:{d.line} ({d.framework} {d.name}); residuals: "
      f"{residuals}",
      _renamed(d.forward_source, f"{base}_forward"), "",
      _renamed(d.backward_source, f"{base}_backward"), "",
      original,
      f"{var} = cg.register(cg.OpDef(\n    " + ",\n    ".join(options) + "))",
      f"cg.register_kernel({var}, {d.framework!r}, _{base}_original, name={ORIGINAL!r},"
      f"\n                   unsupported_modes={dict(d.unsupported_modes)!r})",
  ]
  return "\n".join(lines) + "\n"


def write(definitions: Sequence[Definition], *, source_path: str, out_dir: str,
          gradients: Mapping[str, str], samples_path: str | None = None) -> str | None:
  """Writes ``out_dir/<stem>_xp.py`` (where a definition was not refused); its path. With
  nothing to write, a file of that name from an earlier run is removed."""
  stem = os.path.splitext(os.path.basename(source_path))[0]
  path = os.path.join(out_dir, f"{stem}_xp.py")
  if not any(not d.refused for d in definitions):
    if os.path.exists(path):
      os.remove(path)
    return None
  os.makedirs(out_dir, exist_ok=True)
  text = module_text(definitions, source_path=source_path, out_path=path,
                     gradients=gradients, samples_path=samples_path)
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
  return path
