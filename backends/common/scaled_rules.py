"""A kernel with its custom differentiation rule scaled: what the cross-check's
``custom_rule`` rows run in a kernel's place (a backend's ``scaled_kernel``,
`protocol.Capabilities`).

A kernel is an opaque callable; its rule is reachable where the callable is the rule's
object itself (a `jax.custom_vjp`, a `torch.autograd.Function`'s ``apply``) or a Python
function whose closure or globals hold such objects (``lambda x, *, slope=0.1: leaky(x,
slope)``): a copy of the function then holds their scaled versions instead.
"""

from __future__ import annotations

import types
from typing import Any, Callable


def scaled_kernel(fn: Callable[..., Any], is_rule: Callable[[Any], bool],
                  scaled: Callable[[Any], Any]) -> Callable[..., Any] | None:
  """``fn`` with each rule object it reaches (``is_rule``) replaced by ``scaled(rule)``:
  ``scaled(fn)`` where ``fn`` is one, else a copy of the function whose closure cells and
  globals (the names its code reads) holding rules hold the scaled ones; None where ``fn``
  reaches none."""
  if is_rule(fn):
    return scaled(fn)
  if not isinstance(fn, types.FunctionType):
    return None
  cells = fn.__closure__ or ()
  held = [_contents(cell) for cell in cells]
  named = {name: fn.__globals__[name] for name in fn.__code__.co_names
           if name in fn.__globals__ and is_rule(fn.__globals__[name])}
  if not named and not any(is_rule(v) for v in held):
    return None
  closure = tuple(types.CellType(scaled(v)) if is_rule(v) else cell
                  for cell, v in zip(cells, held))
  global_names = {**fn.__globals__, **{name: scaled(v) for name, v in named.items()}}
  copy = types.FunctionType(fn.__code__, global_names, fn.__name__, fn.__defaults__,
                            closure or None)
  copy.__kwdefaults__ = fn.__kwdefaults__
  return copy


_EMPTY = object()


def _contents(cell: types.CellType) -> Any:
  try:
    return cell.cell_contents
  except ValueError:  # A cell not filled yet.
    return _EMPTY
