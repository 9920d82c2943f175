"""The process-wide table of ops by name (decorator-friendly, duplicate-checked)."""

from __future__ import annotations

import difflib
from typing import Iterable

from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

_OPS: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
  """Adds ``op`` to the registry and returns it.

  Registering the same definition again (a module imported twice) is harmless; a
  different definition under a taken name is a `CrossgradError`.
  """
  if not isinstance(op, OpDef):
    raise CrossgradError("register takes an OpDef", argument="op", expected="OpDef",
                         actual=type(op).__name__)
  existing = _OPS.get(op.name)
  if existing is not None:
    if existing.same_definition(op):
      return existing
    raise CrossgradError(
        "name already registered with a different definition", op=op.name, argument="name",
        hint="Pick another name, or unregister the old op first")
  _OPS[op.name] = op
  return op


def unregister(name: str) -> OpDef:
  """Removes and returns the op called ``name``."""
  op = get(name)
  del _OPS[name]
  return op


def get(name: str) -> OpDef:
  """The `OpDef` registered as ``name``; unknown names list the known ones."""
  try:
    return _OPS[name]
  except (KeyError, TypeError):
    close = difflib.get_close_matches(str(name), list(_OPS), n=1)
    raise CrossgradError(
        "unknown op", argument=f"name {name!r}",
        hint=(f"Did you mean {close[0]!r}? " if close else "") +
        f"Known ops: {', '.join(names()) or 'none'}") from None


def names() -> list[str]:
  """Names of all registered ops, sorted."""
  return sorted(_OPS)


def resolve(ops: Iterable[str | OpDef] | None) -> list[OpDef]:
  """Names or `OpDef`s (registered or not) to `OpDef`s; None means every registered op."""
  if ops is None:
    return [_OPS[n] for n in names()]
  if isinstance(ops, (str, OpDef)):
    ops = [ops]
  return [op if isinstance(op, OpDef) else get(op) for op in ops]
