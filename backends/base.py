"""What every backend shares: the cached `get`, loading backends lazily by name."""

from __future__ import annotations

import importlib
from typing import Any, Callable

from crossgrad.registry import op_registry
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

NAMES = ("numpy", "tensorflow", "jax")
_EXTRAS = {"tensorflow": "tensorflow", "jax": "jax"}


def load(name: str):
  """The backend module called ``name``, importing its framework on first use."""
  if name not in NAMES:
    raise CrossgradError("unknown backend", argument=f"backend {name!r}",
                         expected=" or ".join(NAMES), actual=repr(name))
  try:
    return importlib.import_module(f"crossgrad.backends.{name}")
  except ImportError as e:
    raise CrossgradError(
        f"backend needs a framework that is not installed ({e})", backend=name,
        hint=f'Install it with: pip install "crossgrad[{_EXTRAS.get(name, name)}]"') from e


def make_get(backend: str, emit: Callable[[OpDef, dict], Callable[..., Any]]):
  """Builds a backend's ``get``: one emitted function per (op, static parameters)."""
  cache: dict[tuple, Callable[..., Any]] = {}

  def get(op: str | OpDef, /, **params: Any) -> Callable[..., Any]:
    opdef = op if isinstance(op, OpDef) else op_registry.get(op)
    resolved = opdef.resolve_params(params, backend)
    key = (opdef, tuple(sorted(resolved.items())))
    fn = cache.get(key)
    if fn is None:
      fn = cache[key] = emit(opdef, resolved)
      fn.__name__ = fn.__qualname__ = opdef.name
      fn.__doc__ = f"crossgrad op '{opdef.name}' ({backend}) with params {resolved}."
      fn.op, fn.params = opdef, resolved
    return fn

  get.__doc__ = (f"The {backend} version of a registered op (name or OpDef), with static "
                 "keyword parameters; cached per (op, parameters).")
  return get


def check_mode(backend: str, mode: str, modes: tuple[str, ...]):
  if mode not in modes:
    raise CrossgradError("unknown mode", backend=backend, argument="mode",
                         expected=" or ".join(modes), actual=repr(mode))


def merge_cotangents(op: OpDef, diff_cotangents) -> tuple:
  """Cotangents of the differentiable inputs, spread to one entry per input."""
  merged = [None] * len(op.input_names)
  for i, ct in zip(op.diff_argnums, diff_cotangents):
    merged[i] = ct
  return tuple(merged)
