"""A kernel with its custom differentiation rule scaled: what the cross-check's
``custom_rule`` rows run in a kernel's place (a backend's ``scaled_kernel``,
`protocol.Capabilities`).

A kernel is an opaque callable; its rule is reachable where the callable is the rule's
object itself (a `jax.custom_vjp`, a `torch.autograd.Function`'s ``apply``) or a Python
function whose closure holds such objects (``lambda x, *, slope=0.1: leaky(x, slope)``):
a copy of the function then holds their scaled versions instead.
"""

from __future__ import annotations

import types
from typing import Any, Callable


def scaled_kernel(fn: Callable[..., Any], is_rule: Callable[[Any], bool],
                  scaled: Callable[[Any], Any]) -> Callable[..., Any] | None:
  """``fn`` with each rule object it reaches (``is_rule``) replaced by ``scaled(rule)``:
  ``scaled(fn)`` where ``fn`` is one, else a copy of the function whose closure cells
  holding rules hold the scaled ones; None where ``fn`` reaches none."""
  if is_rule(fn):
    return scaled(fn)
  cells = getattr(fn, "__closure__", None) or ()
  held = [_contents(cell) for cell in cells]
  if not isinstance(fn, types.FunctionType) or not any(is_rule(v) for v in held):
    return None
  closure = tuple(types.CellType(scaled(v)) if is_rule(v) else cell
                  for cell, v in zip(cells, held))
  copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                            closure)
  copy.__kwdefaults__ = fn.__kwdefaults__
  return copy


_EMPTY = object()


def _contents(cell: types.CellType) -> Any:
  try:
    return cell.cell_contents
  except ValueError:  # A cell not filled yet.
    return _EMPTY
