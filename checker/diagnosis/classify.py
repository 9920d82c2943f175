"""The numerical kind of a diverging call, and the small numbers that back it.

`classify` names ``special_value`` (NaN or inf in one result only, or subnormal results
flushed to zero), ``sign_ambiguity``
(eigen- or singular vectors equal up to a sign per vector), ``ill_conditioned`` (linear
algebra on a matrix whose condition number times eps exceeds the tolerance),
``cancellation`` (a sum or difference of nearly equal values whose inputs agree closely and
whose result does not), else ``intermediate``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from crossgrad.checker import compare
from crossgrad.checker.diagnosis import error_map
from crossgrad.checker.diagnosis.kinds import Kind
from crossgrad.checker.diagnosis.recording import Call

LINALG = ("linalg.solve", "linalg.inv", "linalg.cholesky", "linalg.eigh", "linalg.eigvalsh",
          "linalg.pinv", "linalg.svd", "linalg.svdvals", "linalg.det", "linalg.slogdet",
          "linalg.qr", "linalg.matrix_power", "linalg.matrix_rank")
VECTORS = ("linalg.eigh", "linalg.svd")
SUMS = ("+", "-", "add", "subtract")
REPRO_ELEMENTS = 4096  # The most argument elements a diagnosis carries for its repro.


def shown(call: Call) -> str:
  """The call as written: ``xp.linalg.eigh``, ``a - b``, ``x[...]``."""
  if call.name in ("[]",):
    return "x[...]"
  if call.name.startswith("x."):
    return call.name
  if not call.name[0].isalpha():
    return f"a {call.name} b" if len(call.args) == 2 else f"{call.name}(x)"
  return f"xp.{call.name}"


def summary(x: np.ndarray | None) -> dict[str, Any] | None:
  """A few numbers of ``x``: shape, the first values, min and max."""
  if x is None:
    return None
  x = np.asarray(x)
  flat = compare.as_real(x).astype(np.float64).ravel() if x.dtype != bool else x.ravel()
  finite = flat[np.isfinite(flat)] if flat.dtype != bool else flat
  return {"shape": list(x.shape), "first": [_num(v) for v in flat[:6]],
          "min": _num(finite.min()) if finite.size else None,
          "max": _num(finite.max()) if finite.size else None}


def _num(v) -> float | bool:
  v = v.item() if hasattr(v, "item") else v
  return v if isinstance(v, bool) else float(f"{float(v):.7g}")


def worst_error_map(actual: Sequence[np.ndarray],
                    expected: Sequence[np.ndarray]) -> list[list[float]]:
  """The `error_map.error_map` of the worst of the results (largest elementwise error;
  floating arrays of matching shapes only), [] where none compares."""
  maps = [error_map.error_map(a, e) for a, e in zip(actual, expected)
          if np.shape(a) == np.shape(e) and np.size(e) and compare.is_inexact(np.asarray(e).dtype)]
  return max(maps, key=lambda m: max(map(max, m)), default=[])


def classify(ref: Call, call: Call, j: int, dtype: str,
             tolerance: float) -> tuple[Kind, str, dict[str, Any]]:
  """The kind of the divergence at output ``j`` of ``call`` (``ref``: the reference's),
  one sentence on it, and the numbers that back it."""
  expected, actual = ref.outputs[j], call.outputs[j]
  for check in (_special_value, _flushed, _sign_ambiguity, _ill_conditioned, _cancellation):
    found = check(ref, call, expected, actual, dtype, tolerance)
    if found is not None:
      return found
  err = _relative(actual, expected)
  return (Kind.INTERMEDIATE, f"its inputs agree and its result differs by {err:.2g} "
          "(relative to its largest value); compare the two results below.",
          {"relative_error": err})


def _relative(a, e) -> float:
  if a is None or e is None or np.shape(a) != np.shape(e):
    return float("inf")
  return compare.max_relative_error(compare.as_real(a), compare.as_real(e))


def _special_value(ref, call, expected, actual, dtype, tolerance):
  if actual is None or expected is None or not compare.is_inexact(np.asarray(expected).dtype):
    return None
  bad_e, bad_a = ~np.isfinite(expected), ~np.isfinite(actual)
  if np.shape(bad_e) != np.shape(bad_a) or np.array_equal(bad_e, bad_a):
    return None
  zeros = [int(np.sum(a == 0)) for a in ref.args if isinstance(a, np.ndarray)]
  where = "the backend's" if bad_a.sum() > (bad_e & bad_a).sum() else "the reference's"
  return (Kind.SPECIAL_VALUE,
          f"NaN or inf appears in {where} result only ({int(bad_a.sum())} elements in the "
          f"backend's, {int(bad_e.sum())} in the reference's); guard the value (xp.where "
          "before the call, not after it).",
          {"nonfinite_actual": int(bad_a.sum()), "nonfinite_expected": int(bad_e.sum()),
           "zero_inputs": zeros})


def _flushed(ref, call, expected, actual, dtype, tolerance):
  """Subnormal reference results that are 0 in the backend (flush to zero, as TensorFlow
  and XLA do on CPU), where they alone make the difference."""
  if (actual is None or expected is None or np.shape(actual) != np.shape(expected)
      or not compare.is_floating(np.asarray(expected).dtype)):
    return None
  expected, actual = np.asarray(expected), np.asarray(actual)
  tiny = float(compare.finfo(expected.dtype).tiny)
  flushed = (expected != 0) & (np.abs(expected) < tiny) & (actual == 0)
  if not flushed.any() or _relative(np.where(flushed, expected, actual), expected) > tolerance:
    return None
  n = int(flushed.sum())
  return (Kind.SPECIAL_VALUE,
          f"{n} of {flushed.size} results are subnormal (below {tiny:.3g}) in the reference "
          "and 0 in the backend, which flushes subnormals to zero; keep values in the normal "
          "range (e.g. subtract the maximum before exp).",
          {"flushed_subnormals": n, "tiny": tiny})


def _sign_ambiguity(ref, call, expected, actual, dtype, tolerance):
  if ref.name not in VECTORS or actual is None or np.ndim(expected) < 2:
    return None
  for axis, what in ((-2, "column"), (-1, "row")):
    dots = np.sum(np.asarray(actual) * np.conj(expected), axis=axis)
    norms = np.sum(np.abs(expected) ** 2, axis=axis)
    signs = np.where(np.real(dots) < 0, -1.0, 1.0)
    flipped = np.expand_dims(signs, axis) * actual
    if (_relative(flipped, expected) <= tolerance and np.any(signs < 0)
        and np.all(norms > 0)):
      n = int(np.sum(signs < 0))
      return (Kind.SIGN_AMBIGUITY,
              f"{n} of {signs.size} vectors ({what}s) have the other sign; eigen- and "
              "singular vectors are "
              "defined up to sign: fix a convention, e.g. multiply each vector by the sign "
              "of its largest-|.| component so that it is positive.",
              {"flipped_vectors": n, "vectors": int(signs.size)})
  return None


def _ill_conditioned(ref, call, expected, actual, dtype, tolerance):
  matrices = [a for a in ref.args if isinstance(a, np.ndarray) and a.ndim >= 2]
  if ref.name not in LINALG or not matrices:
    return None
  m = matrices[0].astype(np.complex128 if np.iscomplexobj(matrices[0]) else np.float64)
  if m.shape[-1] != m.shape[-2]:
    return None
  cond = float(np.max(np.linalg.cond(m)))
  eps = float(compare.finfo(compare.dtype_of(dtype)).eps)
  if not cond * eps > tolerance:
    return None
  return (Kind.ILL_CONDITIONED,
          f"the matrix has condition number {cond:.3g}: x eps {eps:.2g} = {cond * eps:.2g}, "
          f"above the tolerance {tolerance:.2g}, so no two correct implementations need "
          "agree; regularise it, rescale it, or compute in float64.",
          {"condition_number": cond, "eps": eps})


def _cancellation(ref, call, expected, actual, dtype, tolerance):
  arrays = [(a, b) for a, b in zip(ref.args, call.args) if isinstance(a, np.ndarray)]
  if ref.name not in SUMS or not arrays:
    return None
  inputs = max(_relative(b, a) for a, b in arrays)
  largest = max(float(np.max(np.abs(a), initial=0.0)) for a, _ in arrays)
  result = float(np.max(np.abs(expected), initial=0.0))
  if inputs > tolerance or not largest > 100 * result:
    return None
  eps = float(compare.finfo(compare.dtype_of(dtype)).eps)
  return (Kind.CANCELLATION,
          f"a difference of nearly equal values: its inputs (up to {largest:.4g}) agree to "
          f"{inputs / eps:.3g} ulps, but the result (reference {result:.4g}) is "
          f"{_times(largest, result)} smaller, so their rounding errors dominate it; compute "
          "it without subtracting close values (e.g. center the data first: "
          "mean((x - mean(x))**2)).",
          {"inputs_ulps": inputs / eps, "cancelled": largest / max(result, 1e-300)})


def _times(largest: float, result: float) -> str:
  return "infinitely" if result == 0 else f"{largest / result:.3g} times"


def repro_call(ref: Call, call: Call) -> dict[str, Any] | None:
  """What a repro script needs: the call, its recorded arguments in the reference
  (``args``) and, where they differ, in the backend (``actual_args``: a cancellation's
  inputs differ in their last bits); None where they are too large to carry, or are a
  method's object or an index."""
  if ref.name.startswith("x.") or ref.name == "[]":
    return None
  args, actual = _plain_args(ref.args), _plain_args(call.args)
  if args is None:
    return None
  kwargs = {k: v for k, v in ref.kwargs.items()
            if isinstance(v, (int, float, bool, str, tuple, list)) or v is None}
  differs = actual is not None and actual != args
  return {"name": ref.name, "args": args, "kwargs": kwargs,
          **({"actual_args": actual} if differs else {})}


def _plain_args(values: Sequence[Any]) -> list[dict[str, Any]] | None:
  """Arguments as JSON: ``{"array": nested list, "dtype": name}`` or ``{"value": v}``."""
  args = []
  for a in values:
    if isinstance(a, np.ndarray):
      if a.size > REPRO_ELEMENTS:
        return None
      args.append({"array": compare.as_real(a).tolist(), "dtype": str(a.dtype)})
    elif isinstance(a, (int, float, bool, str)) or a is None:
      args.append({"value": a})
    else:
      return None
  return args
