"""Results a lower precision loses: where the reference in float32 (or a 16-bit dtype) is not
finite and float64's, on the same inputs and cotangent, is a number the dtype can hold (a
``finite`` row). Values beyond the dtype's range (``exp(100)`` in float32) are its right
answer, inf, and pass; a NaN or inf from an intermediate that overflowed (``e / (e + 1)**2``
with ``e = exp(125)``) does not: the same op trains to NaN in that dtype.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from crossgrad.checker import compare
from crossgrad.checker.report import Check, Row, RowContext
from crossgrad.registry import validation
from crossgrad.registry.opdef import OpDef


@dataclasses.dataclass(frozen=True)
class Lost:
  """The first element of result ``name`` that the dtype lost: its index, the dtype's
  value and float64's."""

  name: str
  index: tuple[int, ...]
  low: float
  wide: float

  def words(self, dtype: str) -> str:
    where = f"[{', '.join(map(str, self.index))}]" if self.index else ""
    return (f"{self.name}{where} is {special(self.low)} in {dtype} where float64 gives "
            f"{self.wide:.3g}")


def special(value: float) -> str:
  """NaN or a signed infinity, as rows write them."""
  return "NaN" if np.isnan(value) else "inf" if value > 0 else "-inf"


def first_lost(low: np.ndarray | None, wide: np.ndarray | None, dtype: str,
               name: str, within_range: bool = True) -> Lost | None:
  """The first element non-finite in ``low`` (of ``dtype``) and finite in ``wide`` (float64;
  ``within_range``: and within the dtype's largest value), else None."""
  if low is None or wide is None or not compare.is_floating(np.asarray(low).dtype):
    return None
  low, wide = np.asarray(low), np.asarray(wide, np.float64)
  if low.shape != wide.shape or np.iscomplexobj(low) or np.iscomplexobj(wide):
    return None
  lost = ~np.isfinite(low) & np.isfinite(wide)
  if within_range:
    lost &= np.abs(wide) <= float(np.finfo(compare.dtype_of(dtype)).max)
  if not lost.any():
    return None
  index = tuple(int(i) for i in np.argwhere(lost)[0])
  return Lost(name, index, float(low[index]), float(wide[index]))


def results_lost(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                 cotangent: Sequence[Any], outputs: Sequence[Any], cotangents: Sequence[Any],
                 dtype: str, reference: Any) -> Lost | None:
  """The first output or cotangent of the reference in ``dtype`` (``outputs``,
  ``cotangents``) that float64 gives as a number the dtype holds; None where every one is
  finite (no float64 run then) or float64's is not either."""
  results = [*outputs, *cotangents]
  if all(np.all(np.isfinite(r)) for r in results
         if r is not None and compare.is_floating(np.asarray(r).dtype)):
    return None
  wide_inputs = [x.astype(np.float64) if compare.is_floating(x.dtype) else x for x in inputs]
  wide_g = [None if g is None else np.asarray(g, np.float64) for g in cotangent]
  with np.errstate(all="ignore"):
    wide_outputs, vjp_fn = reference.vjp(op, *wide_inputs, **params)
    single = not isinstance(wide_outputs, tuple)
    wide_cts = vjp_fn(wide_g[0] if single else tuple(wide_g))
  names = ([f"output {k}" for k in range(len(outputs))]
           + [f"d{name}" for name in op.input_names])
  wide = [*validation.as_tuple(wide_outputs), *wide_cts]
  return next((lost for lost in map(first_lost, results, wide, [dtype] * len(results), names)
               if lost is not None), None)


def row(context: RowContext, op: OpDef, params: dict, inputs, cotangent, outputs, cotangents,
        reference: Any) -> Row | None:
  """A failing ``finite`` row where the reference in the context's dtype loses a result
  float64 gives (`results_lost`); None where it loses none (and for float64 itself)."""
  if context.dtype == "float64" or any(np.iscomplexobj(x) for x in (*inputs, *outputs)):
    return None
  try:
    lost = results_lost(op, params, inputs, cotangent, outputs, cotangents, context.dtype,
                        reference)
  except Exception:  # pylint: disable=broad-except  # float64's own rows say why.
    return None
  if lost is None:
    return None
  return context.row(Check.FINITE, None, None, False, (
      f"{lost.words(context.dtype)}: the op overflows (or divides 0 by 0) in "
      f"{context.dtype}; compute it in a form that stays within {context.dtype}'s range"))
