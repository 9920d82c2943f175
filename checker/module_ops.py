"""The ops a ``--module`` registers, which the check selects when ``--ops`` is not given.

A module's ops are those it added to the registry while it was imported: new ops, and
built-in ops it registered kernels for. ``--ops`` names ops (built-in ones included) and
``--ops=all`` checks every registered op.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from typing import Sequence

from crossgrad.checker import selection
from crossgrad.registry import kernels as kernels_lib
from crossgrad.registry import op_registry
from crossgrad.registry.errors import CrossgradError

ALL = "all"  # ``--ops=all``: every registered op, built-in ones included.


@dataclasses.dataclass
class Loaded:
  """One module as loaded: its spec, its module object and what it registered."""

  spec: str
  module: object
  ops: list[str]  # New ops, then ops it registered kernels for, in registration order.
  new_ops: list[str]  # The ops it defined (not those it only gave kernels).
  kernels: list[tuple[str, str, str]]  # (op, backend, kernel name).


def _kernel_keys() -> list[tuple[str, str, str]]:
  return [(k.op, k.backend, k.name) for k in kernels_lib.registered()]


def load(spec: str) -> Loaded:
  """Imports ``spec`` (`selection.load_module`) and records what it registered; a module
  that is not found, or raises while it is imported, is a `CrossgradError`."""
  ops_before, kernels_before = set(op_registry.names()), set(_kernel_keys())
  path = path_of(spec)
  if path is not None:  # Its code as it is now: bytecode cached within the same second
    _forget_bytecode(path)  # and size (an edit of one digit) would be read as current.
  writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, path is not None
  try:
    module = selection.load_module(spec)
  except Exception as e:
    unload(Loaded(spec, None, [], [n for n in op_registry.names() if n not in ops_before],
                  [k for k in _kernel_keys() if k not in kernels_before]))
    if isinstance(e, ImportError):
      raise CrossgradError("cannot import the module", argument="--module",
                           actual=f"{spec!r} ({type(e).__name__}: {e})") from None
    raise  # Half a module registers nothing: loading it again starts afresh.
  finally:
    sys.dont_write_bytecode = writes_bytecode
  new_ops = [n for n in op_registry.names() if n not in ops_before]
  new_kernels = [k for k in _kernel_keys() if k not in kernels_before]
  ops = list(dict.fromkeys(new_ops + [op for op, _, _ in new_kernels]))
  if not ops:  # Imported before (a dotted name): its ops are those whose forward it defines.
    name = getattr(module, "__name__", None)
    ops = [n for n in op_registry.names()
           if getattr(op_registry.get(n).forward, "__module__", None) == name]
  return Loaded(spec, module, ops, new_ops, new_kernels)


def path_of(spec: str) -> str | None:
  """The file of a ``.py`` path spec (`selection.load_module`'s rule); None for a dotted name."""
  return os.path.abspath(spec) if spec.endswith(".py") or os.sep in spec else None


def _forget_bytecode(path: str) -> None:
  try:
    os.remove(importlib.util.cache_from_source(path))
  except (OSError, ValueError, NotImplementedError):
    pass  # None cached, or no cache for this file.


def registers_nothing(spec: str) -> CrossgradError:
  return CrossgradError(
      "the module registers no op, so there is nothing to check", argument="--module",
      actual=repr(spec),
      hint="Register its ops with cg.register(cg.OpDef(...)) (or cg.register_kernel), or "
           "name the ops to check with --ops (--ops=all: every registered op)")


def chosen(ops_flag: Sequence[str] | None, loaded: Sequence[Loaded]) -> list[str] | None:
  """The op names the check selects: ``--ops`` as given (``all``: every op, None), else the
  ops the modules registered; a module that registered none is a `CrossgradError`."""
  if ops_flag is not None:
    return None if list(ops_flag) == [ALL] else list(ops_flag)
  if not loaded:
    return None  # No --module: every registered op, as always.
  for module in loaded:
    if not module.ops:
      raise registers_nothing(module.spec)
  return list(dict.fromkeys(name for module in loaded for name in module.ops))


def unload(loaded: Loaded) -> None:
  """Takes what ``loaded`` registered out of the registry and forgets the module, so that
  loading it again (`load`) registers its new definitions."""
  for key in loaded.kernels:
    if key in _kernel_keys():
      kernels_lib.unregister_kernel(*key)
  for name in loaded.new_ops:
    if name in op_registry.names():
      op_registry.unregister(name)
  module_name = getattr(loaded.module, "__name__", None)
  if module_name in sys.modules and sys.modules[module_name] is loaded.module:
    del sys.modules[module_name]
