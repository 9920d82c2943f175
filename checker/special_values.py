"""Special-value rows: each op on 0, -0.0, +-inf, NaN, the dtype's extremes and its own
boundaries, compared across backends and with the reference, forward and VJP.

Sampled inputs are kept off kinks for finite differences, so they never visit the points
where frameworks really differ. Here the first elements of every floating input are
overwritten with special values: the generic ones (NaN, +-inf, -0.0, 0, +-largest and
+-smallest normal), then the op's `OpDef.edge_samples` with both neighbouring floats of
each. The first block of specials is aligned across inputs (every input holds the same
value at the same place: ties such as ``u == p``), the second rotated by the input's
position (pairs such as inf + -inf); an input with fewer elements takes the first
values. No finite differences: one ``special`` row per backend, device and mode compares
outputs and cotangents element by element (NaN and infinities exactly, finite values at
the row's tolerance; 0.0 equals -0.0 but under ``bitwise``) with the NumPy reference on
the same inputs.

Legitimate framework differences pass with a note saying which: subnormal results
flushed to zero (FTZ, TensorFlow and XLA on CPU) always; those an op declares in
`OpDef.special_differences` for that op only (``"overflow_order"``: NaN and infinities
match anything; ``"daz"``: the backend matches the reference run with subnormal inputs
read as zero; ``"raises"``: the backend may raise).

The policy (``special="advisory"``, the default): a difference is advisory, a passing row
with status ``ADVISORY`` saying what differed, where every differing element is special,
and where a backend (or the reference) raises on the special inputs. An element of an
output or cotangent is special where the reference's value there is not finite, or where
it depends on an input element that is not finite or at the dtype's extremes (+-largest,
+-smallest normal): it changes when those input elements are replaced by the sampled values
or by NaN (`special_elements`). A difference at any other element, a finite reference at
finite, ordinary inputs such as 0 or the op's edges, fails. ``special="strict"`` fails
every difference.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import zlib
from typing import Any, Sequence

import numpy as np

from crossgrad.checker import compare, finite_diff, round_trips
from crossgrad.checker.report import Check, Row, RowContext
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import SPECIAL_DIFFERENCES, OpDef


POLICIES = ("advisory", "strict")


def policy(special: bool | str, argument: str = "special") -> str | None:
  """``special`` as `cross_check` takes it: None (no special rows: False, "off"),
  "advisory" (True, the default) or "strict"; else a `CrossgradError` naming ``argument``."""
  if special is True or special in ("advisory", "true"):
    return "advisory"
  if special is False or special in ("off", "false"):
    return None
  if special == "strict":
    return "strict"
  raise CrossgradError("unknown special-values policy", argument=argument,
                       expected="'advisory' (default), 'strict' or 'off'",
                       actual=repr(special))


_floating = compare.is_floating


def values(op: OpDef, params: dict, dtype: np.dtype) -> np.ndarray:
  """The special values for ``op`` at ``params`` in ``dtype``, most telling first, unique."""
  info = compare.finfo(dtype)
  found = [np.nan, np.inf, -np.inf, -0.0, 0.0, info.max, -info.max, info.tiny, -info.tiny]
  for edge in (op.edge_samples(**params) if op.edge_samples is not None else ()):
    edge = dtype.type(edge)
    found += [edge, np.nextafter(edge, dtype.type(-np.inf)),
              np.nextafter(edge, dtype.type(np.inf))]
  out, seen = [], set()
  for value in np.asarray(found, dtype):
    key = value.tobytes() if not np.isnan(value) else b"nan"
    if key not in seen:
      seen.add(key)
      out.append(value)
  return np.asarray(out, dtype)


def special_inputs(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                   dtype: np.dtype) -> list[np.ndarray]:
  """``inputs`` (already in ``dtype``) with the special values written over their start."""
  specials = values(op, params, dtype)
  n = len(specials)
  out, position = [], 0
  for x in inputs:
    x = np.array(x)
    if not _floating(x.dtype):
      out.append(x)
      continue
    flat = x.reshape(-1)
    aligned = min(n, flat.size)
    flat[:aligned] = specials[:aligned]
    crossed = min(n, flat.size - aligned)
    flat[aligned:aligned + crossed] = np.roll(specials, -(position + 1))[:crossed]
    out.append(flat.reshape(x.shape))
    position += 1
  return out


def _read_as_zero(x: np.ndarray) -> np.ndarray:
  """Subnormals made zeros of their sign, as a DAZ processor reads them."""
  if not _floating(x.dtype):
    return x
  with np.errstate(invalid="ignore"):  # NaN (ml_dtypes' bfloat16 warns where NumPy does not).
    subnormal = np.abs(x) < compare.finfo(x.dtype).tiny
  return np.where(subnormal, np.copysign(np.zeros((), x.dtype), x), x)


@dataclasses.dataclass(frozen=True)
class SpecialCase:
  """Special inputs, one cotangent, the reference's outputs and cotangents for them (one
  list, ``expected``, named by ``names``). What only a failing comparison needs is
  computed on first use, once for every row: the op's declared alternatives to
  ``expected`` (``alternatives``) and which of its elements are special (``special``)."""

  op: OpDef
  params: dict
  reference: Any
  sampled: list[np.ndarray]  # The inputs before the special values were written in.
  inputs: list[np.ndarray]
  cotangent: list[np.ndarray | None]
  expected: list[np.ndarray | None]
  names: list[str]
  typical: list[float | None]  # Per array of ``expected`` (`_typical`), filled in by rows.

  @functools.cached_property
  def alternatives(self) -> list[tuple[str, list[np.ndarray | None], list[float | None]]]:
    """``(what, expected, typical)`` per difference the op declares: with ``"daz"``, the
    reference on the inputs read as a DAZ processor reads them (none where it raises)."""
    if "daz" not in self.op.special_differences:
      return []
    read = [_read_as_zero(x) for x in self.inputs]
    if all(np.array_equal(a, b, equal_nan=True) for a, b in zip(read, self.inputs)):
      return []
    try:
      expected_daz = _reference(self.op, self.params, read, self.reference, self.cotangent)[0]
    except Exception:  # pylint: disable=broad-except  # No alternative: the strict verdict.
      return []
    return [(_declared(self.op, "daz"), expected_daz, _typical(expected_daz))]

  @functools.cached_property
  def special(self) -> list[np.ndarray | None]:
    """Per element of ``expected``: special (see above; `special_elements`)."""
    return special_elements(self.op, self.params, self.inputs, self.sampled, self.expected,
                            self.cotangent, self.reference)


def _reference(op, params, inputs, reference, cotangent=None):
  """The reference's outputs and input cotangents as one list, and the output cotangent
  (``cotangent``, or drawn by calling it on each floating output)."""
  with np.errstate(all="ignore"):
    outputs, vjp_fn = reference.vjp(op, *inputs, **params)
    outputs = validation.as_tuple(outputs)
    if callable(cotangent):
      cotangent = [cotangent(o) if _floating(o.dtype) else None for o in outputs]
    cotangents = vjp_fn(tuple(cotangent) if len(outputs) > 1 else cotangent[0])
  return [*outputs, *cotangents], cotangent


def prepare(op: OpDef, params: dict, inputs: Sequence[np.ndarray], dtype: np.dtype, reference,
            seed: int) -> SpecialCase:
  """The reference on the special version of ``inputs``; raises what the reference raises."""
  special = special_inputs(op, params, inputs, dtype)
  rng = np.random.default_rng([seed, zlib.crc32(f"special {dtype.name}".encode())])
  expected, cotangent = _reference(
      op, params, special, reference,
      lambda o: finite_diff.uniform(rng, o.shape, o.dtype))
  names = [f"output {i}" for i in range(len(cotangent))] + [f"d{n}" for n in op.input_names]
  return SpecialCase(op, params, reference, list(inputs), special, cotangent, expected, names,
              _typical(expected))


def _typical(arrays) -> list[float | None]:
  """Per array, `compare.typical_magnitude` once a comparison has needed it (None until
  then): one list shared by every row's comparisons with these arrays."""
  return [None] * len(arrays)


def _extreme(x: np.ndarray) -> np.ndarray:
  """Where a floating input is not finite or at its dtype's extremes."""
  if not _floating(x.dtype):
    return np.zeros(x.shape, bool)
  info, magnitude = compare.finfo(x.dtype), np.abs(x)
  return ~np.isfinite(x) | (magnitude == info.max) | (magnitude == info.tiny)


def special_elements(op: OpDef, params: dict, special: Sequence[np.ndarray],
                     sampled: Sequence[np.ndarray], expected, cotangent,
                     reference) -> list[np.ndarray | None]:
  """Per element of ``expected`` (the reference on the ``special`` inputs): True where it
  is not finite or depends on a non-finite or extreme input element, that is changes when
  those input elements become their ``sampled`` values, or NaN. Where such a run raises or
  changes a shape, every element counts as special."""
  marks = [_extreme(np.asarray(x)) for x in special]
  masks = [None if e is None else ~np.isfinite(e) if _floating(np.asarray(e).dtype)
           else np.zeros(np.shape(e), bool) for e in expected]
  if not any(m.any() for m in marks):
    return masks
  for fill in (sampled, [np.full(np.shape(x), np.nan, np.asarray(x).dtype)
                         if _floating(np.asarray(x).dtype) else x for x in special]):
    changed = [np.where(m, np.asarray(f, np.asarray(x).dtype), x)
               for x, m, f in zip(special, marks, fill)]
    try:
      other, _ = _reference(op, params, changed, reference, cotangent)
    except Exception:  # pylint: disable=broad-except
      return [None if e is None else np.ones(np.shape(e), bool) for e in expected]
    for k, (e, o) in enumerate(zip(expected, other)):
      if e is None:
        continue
      if o is None or np.shape(o) != np.shape(e):
        masks[k] = np.ones(np.shape(e), bool)
      else:
        masks[k] |= ~compare.bitwise_equal(np.asarray(o), np.asarray(e))
  return masks


def _declared(op: OpDef, kind: str) -> str:
  return f"declared difference: {SPECIAL_DIFFERENCES[kind]} ({op.special_differences[kind]})"


def row(op: OpDef, params: dict, context: RowContext, module: Any, case: SpecialCase,
        tolerance: float, bitwise: bool, strict: bool = False) -> Row:
  """Runs ``module`` on the special inputs and compares everything with the reference;
  divergences at special elements are advisory unless ``strict``."""
  start = time.perf_counter()
  try:
    outputs, cotangents = module.evaluate(op, params, case.inputs, case.cotangent,
                                          device=context.device, mode=context.mode)
  except Exception as e:  # pylint: disable=broad-except
    text = str(e).strip().splitlines()
    raised = f"{type(e).__name__}: {text[0] if text else ''}"
    seconds = time.perf_counter() - start
    if "raises" in op.special_differences:
      return context.row(Check.SPECIAL, None, tolerance, True,
                         f"{_declared(op, 'raises')}; {raised}"[:300], seconds)
    if strict:
      return context.row(Check.SPECIAL, None, tolerance, False, raised[:300], seconds)
    return context.row(Check.SPECIAL, None, tolerance, True,
                       f"advisory: raises on special inputs: {raised}"[:300], seconds,
                       advisory="raises")
  actual = compare.narrowing_undone(round_trips.narrows_integers(module, context.mode),
                                    [*outputs, *cotangents], case.expected)
  relaxations = [compare.FTZ]
  for kind, transform in (("signed_zero", compare.unsigned_zeros),
                          ("overflow_order", compare.overflowed_sums)):
    if kind in op.special_differences:
      relaxations.append((_declared(op, kind), transform))
  result = compare.compare(actual, case.expected, case.names, tolerance, bitwise=bitwise,
                           elementwise=True, relaxations=relaxations, typical=case.typical)
  for what, expected, typical in ([] if result.ok or bitwise else case.alternatives):
    alternative = compare.compare(actual, expected, case.names, tolerance, elementwise=True,
                                  relaxations=relaxations, typical=typical)
    if alternative.ok:
      result = alternative.instead_of(result, what)
      break
  seconds = time.perf_counter() - start
  if result.ok or strict:
    return context.row(Check.SPECIAL, result.error, tolerance, result.ok, result.note,
                       seconds, result.ulps)
  return _judged(context, actual, case, tolerance, bitwise, relaxations, result, seconds)


def _judged(context: RowContext, actual, case: SpecialCase, tolerance: float, bitwise: bool,
            relaxations, result: compare.Comparison, seconds: float) -> Row:
  """A failing comparison judged by the policy: advisory if only special elements differ,
  else failing, its error and note from the other elements."""
  what, outside, masked = set(), False, []
  for a, e, special in zip(actual, case.expected, case.special):
    if e is None:
      masked.append(a)
      continue
    a, e = (None if a is None else np.asarray(a)), np.asarray(e)
    if a is None or a.dtype != e.dtype or a.shape != e.shape:
      return context.row(Check.SPECIAL, result.error, tolerance, False, result.note,
                         seconds, result.ulps)
    relaxed_a, relaxed_e = a, e
    for _, transform in ([] if bitwise else relaxations):
      relaxed_a, relaxed_e = transform(relaxed_a, relaxed_e)
    bad = compare.mismatches(relaxed_a, relaxed_e, tolerance, bitwise)
    outside |= bool((bad & ~special).any())
    what |= compare.what_differs(relaxed_a, relaxed_e, bad)
    masked.append(np.where(special, e, a))
  other = compare.compare(masked, case.expected, case.names, tolerance, bitwise=bitwise,
                          elementwise=True, relaxations=relaxations) if outside else None
  if other is not None and not other.ok:
    return context.row(Check.SPECIAL, other.error, tolerance, False,
                       f"not at special values: {other.note}", seconds, result.ulps)
  return context.row(Check.SPECIAL, result.error, tolerance, True,
                     f"advisory: differs only at special values; {result.note}", seconds,
                     result.ulps, advisory=", ".join(sorted(what)) or "value")
