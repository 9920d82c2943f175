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
outputs and cotangents element by element (NaN, infinities and signed zeros exactly,
finite values at the row's tolerance) with the NumPy reference on the same inputs.

Legitimate framework differences pass with a note saying which: subnormal results
flushed to zero (FTZ, TensorFlow and XLA on CPU) always; those an op declares in
`OpDef.special_differences` for that op only (``"signed_zero"``: 0.0 matches -0.0;
``"overflow_order"``: NaN and infinities match anything; ``"daz"``: the backend matches
the reference run with subnormal inputs read as zero).
"""

from __future__ import annotations

import dataclasses
import time
import zlib
from typing import Any, Sequence

import numpy as np

from crossgrad.checker import compare
from crossgrad.checker.report import Check, Row, RowContext
from crossgrad.registry import validation
from crossgrad.registry.opdef import SPECIAL_DIFFERENCES, OpDef


def _floating(dtype: np.dtype) -> bool:
  return np.issubdtype(dtype, np.floating)


def values(op: OpDef, params: dict, dtype: str) -> np.ndarray:
  """The special values for ``op`` at ``params`` in ``dtype``, most telling first, unique."""
  dtype = np.dtype(dtype)
  info = np.finfo(dtype)
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
                   dtype: str) -> list[np.ndarray]:
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
  return np.where(np.abs(x) < np.finfo(x.dtype).tiny, np.copysign(np.zeros((), x.dtype), x), x)


@dataclasses.dataclass(frozen=True)
class Case:
  """Special inputs, one cotangent, the reference's outputs and cotangents for them (one
  list, ``expected``, named by ``names``), and the op's declared alternatives to it:
  ``(what, expected)``."""

  inputs: list[np.ndarray]
  cotangent: list[np.ndarray | None]
  expected: list[np.ndarray | None]
  names: list[str]
  alternatives: list[tuple[str, list[np.ndarray | None]]]


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


def prepare(op: OpDef, params: dict, inputs: Sequence[np.ndarray], dtype: str, reference,
            seed: int) -> Case:
  """The reference on the special version of ``inputs``; raises what the reference raises."""
  special = special_inputs(op, params, inputs, dtype)
  rng = np.random.default_rng([seed, zlib.crc32(f"special {dtype}".encode())])
  expected, cotangent = _reference(
      op, params, special, reference,
      lambda o: rng.standard_normal(o.shape).astype(o.dtype))
  names = [f"output {i}" for i in range(len(cotangent))] + [f"d{n}" for n in op.input_names]
  alternatives = []
  if "daz" in op.special_differences:
    read = [_read_as_zero(x) for x in special]
    if any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(read, special)):
      alternatives.append((_declared(op, "daz"),
                           _reference(op, params, read, reference, cotangent)[0]))
  return Case(special, cotangent, expected, names, alternatives)


def _declared(op: OpDef, kind: str) -> str:
  return f"declared difference: {SPECIAL_DIFFERENCES[kind]} ({op.special_differences[kind]})"


def row(op: OpDef, params: dict, context: RowContext, module: Any, case: Case,
        tolerance: float, bitwise: bool) -> Row:
  """Runs ``module`` on the special inputs and compares everything with the reference."""
  start = time.perf_counter()
  try:
    outputs, cotangents = module.evaluate(op, params, case.inputs, case.cotangent,
                                          device=context.device, mode=context.mode)
  except Exception as e:  # pylint: disable=broad-except
    text = str(e).strip().splitlines()
    raised = f"{type(e).__name__}: {text[0] if text else ''}"
    declared = "raises" in op.special_differences
    return context.row(Check.SPECIAL, None, tolerance, declared,
                       (f"{_declared(op, 'raises')}; {raised}" if declared else raised)[:300],
                       time.perf_counter() - start)
  actual = [*outputs, *cotangents]
  relaxations = [compare.FTZ]
  for kind, transform in (("signed_zero", compare.unsigned_zeros),
                          ("overflow_order", compare.overflowed_sums)):
    if kind in op.special_differences:
      relaxations.append((_declared(op, kind), transform))
  result = compare.compare(actual, case.expected, case.names, tolerance, bitwise=bitwise,
                           elementwise=True, relaxations=relaxations)
  for what, expected in ([] if result.ok or bitwise else case.alternatives):
    alternative = compare.compare(actual, expected, case.names, tolerance, elementwise=True,
                                  relaxations=relaxations)
    if alternative.ok:
      result = dataclasses.replace(
          alternative, ulps=result.ulps,
          note=f"{what}; strictly {result.note.split(': ', 1)[1]}")
      break
  return context.row(Check.SPECIAL, result.error, tolerance, result.ok, result.note,
                     time.perf_counter() - start, result.ulps)
