"""What a cross-check is asked to cover, checked before anything runs.

Every unknown value (op, backend, dtype, device, mode) is a one-line `CrossgradError`
naming the argument (the flag, ``--modes``, for the binary), the value and the valid ones;
a selection that would check nothing is one too, never a silent pass.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import os
import sys
from typing import Any, Iterable, Sequence

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, round_trips
from crossgrad.registry import op_registry
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

# What the cross-check casts floating inputs to (bfloat16: computed in float32 by the
# reference and rounded; complex inputs take the complex dtype of the same precision).
DTYPES = ("float16", "bfloat16", "float32", "float64")
PLATFORMS = ("cpu", "gpu", "cuda", "tpu")  # JAX names its GPUs gpu:N, torch cuda:N.


def _name(argument: str, flags: bool) -> str:
  return f"--{argument}" if flags else argument


def unknown(argument: str, value: Any, valid: Sequence[str]) -> CrossgradError:
  """The error for a value outside ``valid``, with the closest valid one as a hint."""
  close = difflib.get_close_matches(str(value), list(valid), n=1)
  return CrossgradError("unknown value", argument=argument,
                        expected="one of " + ", ".join(valid), actual=repr(value),
                        hint=f"Did you mean {close[0]!r}?" if close else None)


def nothing_to_check(argument: str, why: str) -> CrossgradError:
  return CrossgradError(f"nothing to check: {why}", argument=argument,
                        hint="A check that checks nothing never passes")


def ops(selected: Iterable[str | OpDef] | str | OpDef | None, *,
        flags: bool = False) -> list[OpDef]:
  """The `OpDef`s asked for (default: every registered op); at least one."""
  argument = _name("ops", flags)
  if isinstance(selected, (str, OpDef)):
    selected = [selected]
  if selected is not None:
    selected = list(selected)
    for op in selected:
      if not isinstance(op, OpDef) and op not in op_registry.names():
        raise unknown(argument, op, op_registry.names())
  found = op_registry.resolve(selected)
  if not found:
    raise nothing_to_check(argument, "no op selected")
  return found


def backends(names: Sequence[str], *, flags: bool = False) -> dict[str, Any]:
  """The framework backends asked for (``numpy``, the reference, always runs), loaded."""
  argument = _name("backends", flags)
  modules = {}
  for name in names:
    if name not in base.names():
      raise unknown(argument, name, base.names())
    try:
      module = base.load(name)
    except CrossgradError as e:
      raise CrossgradError(e.problem, backend=name, argument=argument, hint=e.hint) from None
    round_trips.connect(name, module)
    if name != "numpy":
      modules[name] = module
  return modules


def _device_names(modules: dict[str, Any]) -> list[str]:
  found = []
  for module in modules.values() or [base.load("numpy")]:
    found += [d for d in module.devices() if d not in found]
  platforms = [p for p in PLATFORMS if any(d.split(":")[0] == p for d in found)]
  return ["all"] + platforms + found


def check_dtypes(dtypes: Sequence[str], *, flags: bool = False) -> dict[str, np.dtype]:
  """The dtypes by name, resolved (`compare.dtype_of`); a `CrossgradError` for an unknown
  one, or none (no backend needed)."""
  for value in dtypes:
    if value not in DTYPES:
      raise unknown(_name("dtypes", flags), value, DTYPES)
  if not dtypes:
    raise nothing_to_check(_name("dtypes", flags), "no dtype selected")
  if "bfloat16" in dtypes and importlib.util.find_spec("ml_dtypes") is None:
    raise CrossgradError("bfloat16 needs ml_dtypes (NumPy's bfloat16)",
                         argument=_name("dtypes", flags), actual="'bfloat16'",
                         hint="pip install ml_dtypes (JAX and TensorFlow install it)")
  return {name: compare.dtype_of(name) for name in dtypes}


def check(opdefs: Sequence[OpDef], modules: dict[str, Any], dtypes: Sequence[str],
          devices: str | Sequence[str], modes: Sequence[str] | None, *,
          flags: bool = False) -> dict[str, np.dtype]:
  """The dtypes by name, resolved (`check_dtypes`); a `CrossgradError` for an unknown
  dtype, device or mode, or an empty selection."""
  del opdefs  # Checked by `ops`; here for symmetry with what `cross_check` runs.
  resolved = check_dtypes(dtypes, flags=flags)
  wanted = [devices] if isinstance(devices, str) else list(devices)
  valid = _device_names(modules)
  for value in wanted:
    if value not in valid:
      raise unknown(_name("devices", flags), value, valid)
  if not wanted:
    raise nothing_to_check(_name("devices", flags), "no device selected")
  every_mode = [m for module in modules.values() or [base.load("numpy")]
                for optional in [round_trips.capabilities(module)]
                for m in (*module.MODES, *optional.EXTRA_MODES, *optional.TRANSFORMS,
                          *optional.EXTRA_TRANSFORMS)]
  every_mode = list(dict.fromkeys(every_mode))
  for value in modes or ():
    if value not in every_mode:
      raise unknown(_name("modes", flags), value, every_mode)
  if modes is not None and not modes:
    raise nothing_to_check(_name("modes", flags), "no mode selected")
  return resolved


def load_module(spec: str, *, argument: str = "--module"):
  """A module by dotted name, or from a ``.py`` path (its folder joins ``sys.path``)."""
  if spec.endswith(".py") or os.sep in spec:
    path = os.path.abspath(spec)
    if not os.path.isfile(path):
      raise CrossgradError("no such file", argument=argument,
                           expected="a .py file or a dotted module name", actual=repr(spec))
    name = os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None:
      raise CrossgradError("cannot load the file as a module", argument=argument,
                           expected="a .py file or a dotted module name", actual=repr(spec))
    if os.path.dirname(path) not in sys.path:
      sys.path.insert(0, os.path.dirname(path))  # Its sibling modules import, as in a run.
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module
  try:
    return importlib.import_module(spec)
  except ModuleNotFoundError as e:
    if e.name is None or not spec.startswith(e.name):
      raise  # The module exists; something it imports does not.
    raise CrossgradError("no such module", argument=argument,
                         expected="a dotted module name on sys.path or a .py path",
                         actual=repr(spec)) from None
