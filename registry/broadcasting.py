"""NumPy broadcasting on static shapes, where ``None`` marks a dimension unknown at trace time."""

from __future__ import annotations

from typing import Sequence

Shape = Sequence[int | None]


def broadcast_shape(a: Shape, b: Shape) -> tuple[int | None, ...] | None:
  """The broadcast of two shapes, or None if they cannot broadcast.

  Unknown dimensions are taken to be compatible: against 1 they stay unknown, against
  a known size they take that size.
  """
  rank = max(len(a), len(b))
  a = (1,) * (rank - len(a)) + tuple(a)
  b = (1,) * (rank - len(b)) + tuple(b)
  out = []
  for x, y in zip(a, b):
    if x == 1 or x == y:
      out.append(y)
    elif y == 1:
      out.append(x)
    elif x is None or y is None:
      out.append(x if y is None else y)
    else:
      return None
  return tuple(out)


def sum_axes(shape: Shape, target: Shape) -> tuple[int, ...]:
  """Axes of ``shape`` to sum over to undo broadcasting ``target`` up to ``shape``.

  The leading axes ``target`` lacks, and those where ``target`` has size 1 and
  ``shape`` not (an unknown size in ``shape`` counts as not 1; an unknown size in
  ``target`` as not broadcast).
  """
  lead = len(shape) - len(target)
  return tuple(range(lead)) + tuple(
      lead + i for i, (t, s) in enumerate(zip(target, shape[lead:])) if t == 1 and s != 1)
