"""Comparing a backend's arrays with the reference's: relative error, ULPs, bit equality.

Every comparison row reports two errors: the relative one (what passes or fails a row at
the default tolerance) and the largest distance in units in the last place (ULPs) of the
dtype between corresponding elements (1 for neighbouring floats; 0 for 0.0 against -0.0;
inf where one side is NaN and the other not). 0.0 equals -0.0. ``tolerance="bitwise"``
demands identical bits instead (any NaN matches any NaN: payloads are not portable; 0.0
and -0.0 differ) and names the first element that differs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from crossgrad.registry.errors import CrossgradError

EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
# The low-precision dtypes' default tolerances, in ULPs of the dtype at the largest element
# compared (docs/dtypes.md): frameworks round intermediate results differently (per op in
# TensorFlow and torch, per fused chain under XLA), a few ULPs of 8 or 11 significant bits.
ULPS = {"float16": 10, "bfloat16": 4}
# Relative errors; float32's is about 84 ULPs, float64's about 4500.
TOLERANCE = {"float32": 1e-5, "float64": 1e-12, **{d: n * EPS[d] for d, n in ULPS.items()}}
BITWISE = "bitwise"


def dtype_of(name: str) -> np.dtype:
  """A NumPy dtype by name; bfloat16 is ml_dtypes' (installed with JAX and TensorFlow)."""
  if name == "bfloat16":
    import ml_dtypes  # pylint: disable=g-import-not-at-top  # Only where bfloat16 is asked.
    return np.dtype(ml_dtypes.bfloat16)
  return np.dtype(name)


def finfo(dtype: Any):
  """`np.finfo`, bfloat16 included (ml_dtypes' finfo)."""
  dtype = np.dtype(dtype)
  if dtype.name == "bfloat16":
    import ml_dtypes  # pylint: disable=g-import-not-at-top
    return ml_dtypes.finfo(dtype)
  return np.finfo(dtype)


def is_floating(dtype: Any) -> bool:
  """Real floating, bfloat16 (ml_dtypes, not a NumPy floating subtype) included."""
  dtype = np.dtype(dtype)
  return np.issubdtype(dtype, np.floating) or dtype.name == "bfloat16"


def is_inexact(dtype: Any) -> bool:
  """Floating or complex: what carries a gradient."""
  return is_floating(dtype) or np.issubdtype(np.dtype(dtype), np.complexfloating)


def as_real(x: np.ndarray) -> np.ndarray:
  """A complex array as its real and imaginary parts (a trailing axis of 2, of the real
  dtype of the same precision); other arrays unchanged. Complex values are compared, and
  differentiated by finite differences, as these pairs of reals."""
  x = np.asarray(x)
  if not np.issubdtype(x.dtype, np.complexfloating):
    return x
  return np.stack([x.real, x.imag], axis=-1)


def as_complex(x: np.ndarray) -> np.ndarray:
  """`as_real`'s inverse: a trailing axis of (real, imaginary) as complex."""
  return x[..., 0] + 1j * x[..., 1]


def tolerance_for(dtype: str, tolerance: str | float | None = None) -> float:
  """The relative tolerance of a row: the dtype's default, a number, or 0 for bitwise."""
  if tolerance is None or tolerance == "default":
    return TOLERANCE.get(dtype, 1e-5)
  if tolerance == BITWISE:
    return 0.0
  return float(tolerance)


def check_tolerance(tolerance: Any, argument: str = "tolerance") -> str | float | None:
  """``tolerance`` as `cross_check` takes it, or a `CrossgradError` naming ``argument``."""
  if tolerance is None or tolerance in ("default", BITWISE):
    return tolerance
  try:
    value = float(tolerance)
  except (TypeError, ValueError):
    value = float("nan")
  if not value >= 0 or value == float("inf"):
    raise CrossgradError("unknown tolerance", argument=argument,
                         expected="'default', 'bitwise' or a finite number >= 0",
                         actual=repr(tolerance))
  return value


def _largest(x: np.ndarray) -> float:
  """The largest |x| in float64, NaN read as 0 and infinities as the largest float64."""
  return float(np.max(np.abs(np.nan_to_num(x.astype(np.float64))), initial=0.0))


def max_relative_error(actual: np.ndarray, expected: np.ndarray,
                       whole: tuple[np.ndarray, np.ndarray] | None = None,
                       floor: float = 0.0) -> float:
  """max |a - e| over the largest magnitude of either (of ``whole``'s, where ``actual`` and
  ``expected`` are parts of those arrays), or over ``floor`` where that is larger; inf on
  shape or NaN mismatch."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  if actual.shape != expected.shape:
    return float("inf")
  a, e = actual.astype(np.float64), expected.astype(np.float64)
  if not np.array_equal(np.isnan(a), np.isnan(e)):
    return float("inf")
  diff = np.max(np.abs(np.nan_to_num(a) - np.nan_to_num(e)), initial=0.0)
  if diff == 0:
    return 0.0
  scale = max(floor, *(_largest(x) for x in whole or (actual, expected)))
  return float(diff / max(scale, np.finfo(np.float64).tiny))


def _ordered(x: np.ndarray) -> np.ndarray:
  """Floats as int64 in their numeric order, consecutive floats one apart (-0.0 -> 0)."""
  bits = x.view(np.dtype(f"int{8 * x.dtype.itemsize}")).astype(np.int64)
  sign = np.int64(-1) << np.int64(8 * x.dtype.itemsize - 1)
  return np.where(bits < 0, sign - bits, bits)


def ulp_distance(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
  """Elementwise distance in ULPs of the (shared floating) dtype, as float64.

  Two NaNs are 0 apart, a NaN and a number inf; infinities are one ULP past the largest
  finite value. Integer arrays: the absolute difference.
  """
  actual, expected = np.asarray(actual), np.asarray(expected)
  if not is_floating(expected.dtype):
    return np.abs(actual.astype(np.float64) - expected.astype(np.float64))
  a, e = _ordered(actual), _ordered(expected)
  same_side = (a >= 0) == (e >= 0)
  exact = np.abs(np.where(same_side, a - e, 0)).astype(np.float64)
  far = np.abs(a.astype(np.float64)) + np.abs(e.astype(np.float64))
  distance = np.where(same_side, exact, far)
  nan_a, nan_e = np.isnan(actual), np.isnan(expected)
  return np.where(nan_a & nan_e, 0.0, np.where(nan_a | nan_e, np.inf, distance))


def _has_float_bits(x: np.ndarray) -> bool:
  return x.dtype.kind in "fV" or x.dtype.name == "bfloat16"


def _bits(x: np.ndarray) -> np.ndarray:
  """A floating array's bits as unsigned integers; other arrays unchanged."""
  return x.view(np.dtype(f"uint{8 * x.dtype.itemsize}")) if _has_float_bits(x) else x


def bitwise_equal(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
  """Elementwise: identical bits, or both NaN."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  same = _bits(actual) == _bits(expected)
  if _has_float_bits(actual):
    same |= np.isnan(actual) & np.isnan(expected)
  return same


def differing(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
  """The flat indices where `bitwise_equal` is False: one pass where few differ."""
  actual, expected = np.ravel(actual), np.ravel(expected)
  where = np.flatnonzero(_bits(actual) != _bits(expected))
  if not _has_float_bits(actual) or not where.size:
    return where
  return where[~(np.isnan(actual[where]) & np.isnan(expected[where]))]


def typical_magnitude(e: np.ndarray) -> float:
  """The median finite |e|, as a float (0 where none is finite): found by partitioning,
  linear in the size, not by sorting; in float32 or float64, whichever holds ``e`` exactly."""
  e = np.asarray(e)
  if e.dtype not in (np.float32, np.float64):
    e = e.astype(np.float32 if e.dtype.itemsize < 4 else np.float64)
  finite = e[np.isfinite(e)]
  if not finite.size:
    return 0.0
  np.abs(finite, out=finite)
  middle = finite.size // 2
  finite.partition(middle)
  return float(finite[middle])


def _robust_errors(a: np.ndarray, e: np.ndarray, typical: float | None = None) -> np.ndarray:
  """Elementwise |a - e| over the larger of |a|, |e| and the median finite |e| (``typical``:
  `typical_magnitude` of the whole array where ``a`` and ``e`` are parts of it), in
  float64; 0 where either is not finite (`_class_mismatch` judges those).

  The median keeps results of cancellation comparable to the output's typical size, and
  unlike the maximum it is not swamped by the dtype's extremes in special inputs.
  """
  typical = typical_magnitude(e) if typical is None else typical  # No mean: no overflow.
  a, e = a.astype(np.float64), e.astype(np.float64)
  both = np.isfinite(a) & np.isfinite(e)
  a, e = np.where(both, a, 0.0), np.where(both, e, 0.0)
  with np.errstate(over="ignore"):
    diff = np.abs(a - e)
  scale = np.maximum(np.maximum(np.abs(a), np.abs(e)), max(typical, np.finfo(np.float64).tiny))
  return np.where(diff == 0, 0.0, diff / scale)


def _class_mismatch(a: np.ndarray, e: np.ndarray) -> np.ndarray:
  """Where NaN-ness or an infinity (with its sign) differs (0.0 equals -0.0)."""
  return ((np.isnan(a) != np.isnan(e)) | (np.isinf(a) != np.isinf(e))
          | (np.isinf(a) & np.isinf(e) & (a != e)))


def mismatches(actual: np.ndarray, expected: np.ndarray, tolerance: float,
               bitwise: bool = False) -> np.ndarray:
  """Elementwise, as a special row judges: where the bits differ (``bitwise``, NaN matching
  NaN), else where NaN-ness or an infinity differs or the relative error
  (`_robust_errors`) exceeds ``tolerance``; integers where they differ."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  if bitwise:
    return ~bitwise_equal(actual, expected)
  if not is_floating(expected.dtype):
    return actual != expected
  return _class_mismatch(actual, expected) | (_robust_errors(actual, expected) > tolerance)


def what_differs(actual: np.ndarray, expected: np.ndarray, where: np.ndarray) -> set[str]:
  """Words for the differences at the elements ``where``: "NaN vs a number", "infinity",
  "finite value", "signed zero" (bitwise only) or "integer value"."""
  actual, expected = np.asarray(actual)[where], np.asarray(expected)[where]
  if not is_floating(expected.dtype):
    return {"integer value"} if actual.size else set()
  nan = np.isnan(actual) != np.isnan(expected)
  inf = ~nan & _class_mismatch(actual, expected)
  zero = (actual == 0) & (expected == 0)
  kinds = {"NaN vs a number": nan.any(), "infinity": inf.any(),
           "signed zero": (zero & ~(nan | inf)).any(),
           "finite value": (~(nan | inf | zero)).any()}
  return {k for k, found in kinds.items() if found}


@dataclasses.dataclass(frozen=True)
class Comparison:
  """One row's verdict: relative error, ULPs, pass or fail, whether every element has
  identical bits (NaN matching NaN), and what differs: a ``mismatch`` of structure (a
  missing array, dtype, shape), the ``worst`` element, the ``first_difference`` (bitwise);
  where a relaxed comparison passed, what it took (``passed_by``) and the strict
  comparison's worst element (``strictly``). ``note`` says it in words."""

  error: float
  ulps: float | None
  ok: bool
  identical: bool = False
  mismatch: str = ""
  worst: str = ""
  first_difference: str = ""
  passed_by: tuple[str, ...] = ()
  strictly: str = ""

  @property
  def note(self) -> str:
    if self.passed_by:
      return f"{'; '.join(self.passed_by)}; strictly {self.strictly}"
    if self.worst:
      return f"worst: {self.worst}"
    return self.mismatch or self.first_difference

  def instead_of(self, strict: "Comparison", *passed_by: str) -> "Comparison":
    """This passing comparison, reached by ``passed_by`` where ``strict`` failed: its ULPs
    and strict worst element are ``strict``'s."""
    return dataclasses.replace(self, ulps=strict.ulps, worst="", passed_by=passed_by,
                               strictly=strict.worst)


def _mismatch(note: str) -> Comparison:
  return Comparison(float("inf"), None, False, mismatch=note)


FLUSH_SLACK = 64  # In smallest normals: a flushed subnormal term times the op's constants.


def flush_subnormals(actual: np.ndarray, expected: np.ndarray):
  """Both arrays with +0.0 wherever they differ, but by at most `FLUSH_SLACK` smallest
  normals: flush-to-zero hardware (FTZ/DAZ) turns subnormal results and
  intermediates (``b * x`` in ``a * y + b * x``) into zeros, losing that much and the sign
  of the zero. (0.0 against -0.0 alone is no flush: see `unsigned_zeros`.)"""
  actual, expected = np.asarray(actual), np.asarray(expected)
  if (not is_floating(expected.dtype) or actual.shape != expected.shape
      or actual.dtype != expected.dtype):
    return actual, expected
  where = differing(actual, expected)  # Only these can differ by a flush: one pass.
  a, e = actual.reshape(-1)[where], expected.reshape(-1)[where]
  with np.errstate(over="ignore", invalid="ignore"):
    gap = np.abs(a.astype(np.float64) - e.astype(np.float64))
  where = where[(gap <= FLUSH_SLACK * float(finfo(expected.dtype).tiny)) & (a != e)]
  if not where.size:
    return actual, expected
  flushed = []
  for x in (actual, expected):
    x = np.array(x, order="C")  # A copy, flushed at ``where`` (flat indices).
    x.reshape(-1)[where] = 0
    flushed.append(x)
  return tuple(flushed)


FTZ = ("subnormals flushed to zero (FTZ/DAZ), as TensorFlow and XLA do on CPU",
       flush_subnormals)


def overflowed_sums(actual: np.ndarray, expected: np.ndarray):
  """Both arrays with 0.0 wherever either is NaN or infinite: the result of a sum whose
  partial sums overflow depends on the order it adds in (NaN, +-inf or finite)."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  if not np.issubdtype(expected.dtype, np.floating):
    return actual, expected
  either = ~(np.isfinite(actual) & np.isfinite(expected))
  zero = np.zeros((), expected.dtype)
  return np.where(either, zero, actual), np.where(either, zero, expected)


def unsigned_zeros(actual: np.ndarray, expected: np.ndarray):
  """Both arrays with every zero made +0.0."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  if not np.issubdtype(expected.dtype, np.floating):
    return actual, expected
  return actual + np.zeros((), actual.dtype), expected + np.zeros((), expected.dtype)


def compare(actual: Sequence[Any], expected: Sequence[Any], names: Sequence[str],
            tolerance: float, *, bitwise: bool = False, elementwise: bool = False,
            reference: str = "reference",
            relaxations: Sequence[tuple[str, Callable[..., tuple[Any, Any]]]] = (),
            typical: Sequence[float | None] | None = None,
            whole_vector: bool = False) -> Comparison:
  """Compares pairs of arrays (an ``expected`` None is skipped), naming the worst element.

  Args:
    actual, expected, names: the arrays and what to call them in notes ("dx").
    tolerance: the largest relative error that passes.
    bitwise: pass only on identical bits (NaN matches NaN); the note names the first
      element that differs.
    elementwise: for special inputs: NaN and infinities must match element for element,
      and the relative error is taken per element (`_robust_errors`).
    reference: what ``expected`` is called in notes ("reference", "cpu:0").
    relaxations: ``(what, transform)`` pairs, where the strict comparison fails (never
      with ``bitwise``): the first, then the first two, ... are applied to each pair of
      arrays (``transform(actual, expected)``); the row passes if one such comparison
      does, and its note says which were needed.
    typical: with ``elementwise``, a list holding per pair the median finite magnitude of
      the expected array (`typical_magnitude`), None where not known yet: filled in where
      needed, so a caller comparing with the same arrays again may keep it. The relaxed
      comparisons keep the strict one's: the reference's typical size.
    whole_vector: the arrays are parts of one vector (a VJP's cotangents, one per input):
      where the strict comparison fails, each error relative to the largest element of all
      the expected arrays decides. A cotangent that is small because its terms cancel (a
      scalar parameter's gradient, a sum of terms of both signs) is then held to the
      accuracy of the whole gradient, which is what its dtype can give; the note says so.
  """
  typical = [None] * len(names) if typical is None else typical
  result = _compare(actual, expected, names, tolerance, bitwise, elementwise, reference,
                    typical)
  if result.ok or bitwise or result.ulps is None:
    return result
  if whole_vector and not elementwise:
    largest = max((_largest(as_real(np.asarray(e))) for e in expected if e is not None),
                  default=0.0)
    whole = _compare(actual, expected, names, tolerance, False, False, reference, typical,
                     floor=largest)
    if whole.ok:
      return whole.instead_of(result, "relative to the largest element of all the arrays")
  pairs, used = list(zip(actual, expected)), []
  for what, transform in relaxations:
    relaxed_pairs = [(a, e) if a is None or e is None else transform(a, e) for a, e in pairs]
    if all(a is None or e is None or (ra is a and re is e)
           or not (differing(a, ra).size or differing(e, re).size)
           for (a, e), (ra, re) in zip(pairs, relaxed_pairs)):
      continue  # Changes nothing here: not what the row needs.
    pairs = relaxed_pairs
    used.append(what)
    relaxed = _compare([a for a, _ in pairs], [e for _, e in pairs], names, tolerance,
                       bitwise, elementwise, reference, typical)
    if relaxed.ok:  # The error is the relaxed one; ULPs and the note tell the strict story.
      return relaxed.instead_of(result, *used)
  return result


_NARROWED = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32)}


def narrowing_undone(narrowed: bool, actual: Sequence[Any], expected: Sequence[Any]) -> list:
  """``actual`` for comparison with the reference's ``expected``. From a backend that makes
  64-bit integers 32-bit (``narrowed``: `round_trips.narrows_integers`; JAX without x64,
  whose ``argmax`` is int32 where NumPy's is int64), each int32 (uint32) array where the
  reference's is int64 (uint64) is cast to it: its values are compared, not its width."""
  if not narrowed:
    return list(actual)
  return [a if a is None or e is None
          or _NARROWED.get(np.asarray(e).dtype) != np.asarray(a).dtype
          else np.asarray(a).astype(np.asarray(e).dtype) for a, e in zip(actual, expected)]


def _differences(a: np.ndarray, e: np.ndarray, elementwise: bool,
                 typical: Callable[[], float], floor: float = 0.0):
  """One pair's (error, largest ULPs, flat index of the worst element, of the first one
  whose bits differ or None, and that one's ULPs).

  Only the elements whose bits differ are measured (the others are 0 ULPs and 0 error
  apart); the whole arrays only give the scale (their largest or median magnitude), so
  identical arrays cost one pass. ``typical()``: `typical_magnitude` of the expected array;
  ``floor``: a larger scale to measure against (`compare`'s ``whole_vector``).
  """
  flat_a, flat_e = a.reshape(-1), e.reshape(-1)
  where = differing(flat_a, flat_e)
  if not where.size:
    return 0.0, 0.0, 0, None, 0.0
  a, e = flat_a[where], flat_e[where]
  distance = ulp_distance(a, e)
  floating = is_floating(e.dtype)
  if elementwise and floating:
    errors = np.where(_class_mismatch(a, e), np.inf,
                      _robust_errors(a, e, typical()))
    worst = int(np.argmax(errors))
    err, at = float(errors[worst]), int(where[worst]) if errors[worst] else 0
  else:
    err = (max_relative_error(a, e, (flat_a, flat_e), floor) if floating
           else float("inf") if distance.any() else 0.0)
    worst = int(np.argmax(distance))
    at = int(where[worst]) if distance[worst] else 0
  return err, float(np.max(distance)), at, int(where[0]), float(distance[0])


def _compare(actual, expected, names, tolerance, bitwise, elementwise, reference, typical,
             floor=0.0):
  worst, ulps, worst_at, first_difference = 0.0, 0.0, "", ""
  for k, (name, a, e) in enumerate(zip(names, actual, expected)):
    if e is None:
      continue
    if a is None:
      return _mismatch(f"{name}: None, {reference} an array")
    a, e = np.asarray(a), np.asarray(e)
    if a.dtype != e.dtype:
      return _mismatch(f"{name}: dtype {a.dtype}, {reference} {e.dtype}")
    if a.shape != e.shape:
      return _mismatch(f"{name}: shape {a.shape}, {reference} {e.shape}")
    a, e = as_real(a), as_real(e)  # Complex: real and imaginary parts, last axis.

    def scale(k=k, e=e):
      if typical[k] is None:
        typical[k] = typical_magnitude(e)
      return typical[k]

    err, most, at, first, first_ulps = _differences(a, e, elementwise, scale, floor)
    ulps = max(ulps, most)
    if err > worst or not worst_at:
      worst, worst_at = err, _describe(name, a, e, at, reference)
    if not first_difference and first is not None:
      first_difference = f"{_describe(name, a, e, first, reference)} ({first_ulps:.0f} ulps)"
  identical = not first_difference
  if bitwise:
    return Comparison(worst, ulps, identical, identical, first_difference=first_difference)
  ok = worst <= tolerance
  return Comparison(worst, ulps, ok, identical, worst="" if ok else worst_at)


def _describe(name: str, a: np.ndarray, e: np.ndarray, flat: int, reference: str) -> str:
  if not a.size:  # Zero-size arrays differ only in dtype or shape, named by the caller.
    return name
  index = "[" + ", ".join(map(str, np.unravel_index(flat, a.shape))) + "]" if a.shape else ""
  return f"{name}{index}: {a.reshape(-1)[flat].item()!r} vs {reference} " \
         f"{e.reshape(-1)[flat].item()!r}"
