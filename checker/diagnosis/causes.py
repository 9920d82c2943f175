"""Failing rows grouped into causes, one diagnosis each: a pass over a finished report.

Per op and parameter set with failing rows: a failing ``fd`` row, or failing ``jvp`` and
``second_order`` rows, ask whether the reference backward is wrong (`backward`); if it is,
that diagnosis explains those rows, in every backend and mode. The other failing rows of a
backend, dtype, mode and device ask for the first diverging call (`divergence`); settings
whose divergences agree (kind and line) are one cause. Rows left over get ``unknown`` with
their numbers. Only failing rows are looked at, within as many seconds as the op's rows took.
"""

from __future__ import annotations

import dataclasses
import time
import zlib
from typing import Callable, Sequence

import numpy as np

from crossgrad.checker import compare, engine, finite_diff
from crossgrad.checker.diagnosis import (backward, divergence, overflowing, rule_not_used,
                                         unsupported, variant_causes)
from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.checker.report import Check, Report, Row
from crossgrad.checker.rows import setting
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef


FROM_BACKWARD = (Check.FD, Check.JVP, Check.SECOND_ORDER)  # Rows a wrong backward fails.
# What the fd row says, and a backend that checks the backward's linearity in g (JAX's)
# raises with: its rows follow from a backward that ignores g or is not linear in it.
NOT_LINEAR = finite_diff.NOT_LINEAR
LINEARITY = (Kind.IGNORES_COTANGENT, Kind.NOT_LINEAR_IN_COTANGENT)
NUMERICAL = (Kind.CANCELLATION, Kind.ILL_CONDITIONED)  # Divergences that lose digits.
MIN_SECONDS = 1.0  # The least time an op's diagnosis gets, however fast its rows were.


# Diagnoses tried on each failing row before the built-in ones: ``explain(row, op)`` (``op``:
# its `OpDef`, None where it is not among the checked ops) returns a `Diagnosis` or None.
EXPLAINERS: list[Callable[[Row, OpDef | None], Diagnosis | None]] = [
    unsupported.diagnose, rule_not_used.diagnose]


def register_diagnosis(explain: Callable[[Row, OpDef | None], Diagnosis | None]):
  """Adds ``explain`` to `EXPLAINERS`, after the others: a diagnosis kind of one's own
  (its ``kind`` any string), tried on failing rows before the built-in diagnoses."""
  if not callable(explain):
    raise CrossgradError("a diagnosis is a function of a failing row and its op",
                         argument="explain", expected="a callable (row, op) -> Diagnosis | None",
                         actual=type(explain).__name__)
  EXPLAINERS.append(explain)
  return explain


def unregister_diagnosis(explain: Callable[[Row, OpDef | None], Diagnosis | None]) -> None:
  """Removes ``explain`` from `EXPLAINERS` (nothing if it is not there)."""
  EXPLAINERS[:] = [e for e in EXPLAINERS if e is not explain]


def _explained(rows: Sequence[Row], op: OpDef | None) -> dict[int, Diagnosis]:
  """The rows an explainer of `EXPLAINERS` diagnoses (the first that does), by row id."""
  found = {}
  for row in rows:
    diagnosis = next((d for explain in EXPLAINERS if (d := explain(row, op)) is not None),
                     None)
    if diagnosis is not None:
      found[id(row)] = diagnosis
  return found


def diagnose(report: Report, ops: Sequence[OpDef], seed: int = 0,
             clock: Callable[[], float] = time.perf_counter) -> Report:
  """``report`` with a diagnosis on each failing row that has none (the same report when
  there is none: nothing failed, or shards diagnosed their rows); ``ops``: the checked ops,
  ``seed``: the check's."""
  failing = [r for r in report.failures if r.diagnosis is None]
  if not failing:
    return report
  by_name = {op.name: op for op in ops}
  found: dict[int, Diagnosis] = {}
  for (name, label), rows in _grouped(failing, lambda r: (r.op, r.params)).items():
    explained = _explained(rows, by_name.get(name))
    found.update(explained)
    rows = [r for r in rows if id(r) not in explained]
    op = by_name.get(name)
    seconds = sum(r.seconds for r in report.rows if (r.op, r.params) == (name, label))
    deadline = clock() + max(seconds, MIN_SECONDS)
    sample, varied = [r for r in rows if not r.variant], [r for r in rows if r.variant]
    if op is not None:  # The sample's rows first; the variants' in the time left.
      found.update(_op_causes(op, label, sample, seed, lambda: clock() < deadline))
    found.update(_unknown(sample, found, timed_out=clock() >= deadline))
    if op is not None and varied:
      found.update(_variant_causes(op, label, varied, seed, lambda: clock() < deadline))
    found.update(_unknown(varied, found, timed_out=clock() >= deadline))
  rows = [dataclasses.replace(r, diagnosis=found[id(r)]) if id(r) in found else r
          for r in report.rows]
  return Report(rows, report.seconds, report.environment)


def _grouped(rows: Sequence[Row], key: Callable[[Row], tuple]) -> dict[tuple, list[Row]]:
  groups: dict[tuple, list[Row]] = {}
  for row in rows:
    groups.setdefault(key(row), []).append(row)
  return groups


def _params(op: OpDef, label: str) -> dict | None:
  for params in op.param_sets:
    resolved = op.resolve_params(params)
    if setting.params_label(resolved) == label:
      return resolved
  return None


def _op_causes(op: OpDef, label: str, rows: list[Row], seed: int,
               in_time: Callable[[], bool]) -> dict[int, Diagnosis]:
  """Diagnoses of ``rows`` (one op and parameter set) by row id, where one is found. A
  right backward that finite differences cannot confirm (``ill_conditioned``) joins the
  op's first numerical divergence: the same digits lost, located at the call."""
  params = _params(op, label)
  if params is None:
    return {}
  try:
    inputs = engine._sample(op, seed, params)  # pylint: disable=protected-access
  except Exception:  # pylint: disable=broad-except  # The sample row says why.
    return {}
  found = _shape_cause(op, label, params, inputs, rows)
  found.update(_overflow_cause(op, label, params, inputs,
                               [r for r in rows if id(r) not in found], seed))
  found.update(_backward_cause(op, label, params, inputs,
                               [r for r in rows if id(r) not in found], seed, in_time))
  return _found_or_diverging(op, label, params, inputs, rows, found, seed, in_time)


def _variant_causes(op: OpDef, label: str, rows: list[Row], seed: int,
                    in_time: Callable[[], bool]) -> dict[int, Diagnosis]:
  """Diagnoses of failing ``variant`` rows, on their variants' inputs (`variant_causes`)."""
  params = _params(op, label)
  try:
    inputs = engine._sample(op, seed, params)  # pylint: disable=protected-access
  except Exception:  # pylint: disable=broad-except
    return {}
  return {k: dataclasses.replace(d, cause=_cause_id(op.name, label, d)) for k, d in
          variant_causes.diagnose(op, params, inputs, rows, seed, in_time).items()}


def _found_or_diverging(op: OpDef, label: str, params: dict, inputs, rows: list[Row],
                        found: dict[int, Diagnosis], seed: int,
                        in_time: Callable[[], bool]) -> dict[int, Diagnosis]:
  """``found``, and the first diverging calls of the backend rows it does not explain."""
  # A kernel's program is opaque: tracing the op's definition would not find its fault;
  # a row that raised has no values a call could explain.
  rest = [r for r in rows if id(r) not in found and r.backend != "numpy"
          and r.impl == "emitted" and r.error is not None]
  if not rest:
    return found
  diverging = _divergence_causes(op, label, params, inputs, rest, seed, in_time)
  numerical = [d for d in diverging.values() if d.kind in NUMERICAL]
  if numerical:
    found = {k: numerical[0] if d.kind == Kind.ILL_CONDITIONED else d
             for k, d in found.items()}
  return {**found, **diverging}


def _shape_cause(op: OpDef, label: str, params: dict, inputs,
                 rows: list[Row]) -> dict[int, Diagnosis]:
  """The rows a backward returning a cotangent of the wrong shape on the sample explains."""
  shaped = [r for r in rows if variant_causes.SHAPE_ERROR in r.note]
  if not shaped:
    return {}
  try:
    found = variant_causes.shape_mismatch(op, params, setting.cast_inputs(inputs, np.float64))
  except Exception:  # pylint: disable=broad-except  # Left to the others.
    return {}
  if found is None:
    return {}
  found = dataclasses.replace(found, cause=_cause_id(op.name, label, found))
  return {id(r): found for r in shaped}


def _overflow_cause(op: OpDef, label: str, params: dict, inputs, rows: list[Row],
                    seed: int) -> dict[int, Diagnosis]:
  """Per dtype with a failing ``finite`` row, the call that loses the value there
  (`overflowing`): it explains that row and the dtype's rows that got NaN or inf."""
  found = {}
  for dtype in {r.dtype for r in rows if r.check == Check.FINITE}:
    try:
      lost = overflowing.diagnose(op, params, inputs, dtype, seed,
                                  engine._random_like)  # pylint: disable=protected-access
    except Exception:  # pylint: disable=broad-except  # Left to the others.
      continue
    if lost is None:
      continue
    lost = dataclasses.replace(lost, cause=_cause_id(op.name, label, lost))
    found.update({id(r): lost for r in rows if r.dtype == dtype and (
        r.check == Check.FINITE or "NaN" in r.note or "inf" in r.note)})
  return found


def _backward_cause(op: OpDef, label: str, params: dict, inputs, rows: list[Row], seed: int,
                    in_time: Callable[[], bool]) -> dict[int, Diagnosis]:
  """The rows a wrong reference backward explains, with its diagnosis."""
  if not any(r.check in FROM_BACKWARD or NOT_LINEAR in r.note for r in rows):
    return {}
  try:
    wrong = backward.diagnose(op, params, inputs, seed, in_time)
  except Exception:  # pylint: disable=broad-except  # Left to `_unknown` (or timed out).
    return {}
  if wrong is None:
    return {}
  wrong = dataclasses.replace(wrong, cause=_cause_id(op.name, label, wrong))
  return {id(r): wrong for r in rows if r.check in FROM_BACKWARD
          or (wrong.kind in LINEARITY and NOT_LINEAR in r.note)}


def _divergence_causes(op: OpDef, label: str, params: dict, inputs, rows: list[Row],
                       seed: int, in_time: Callable[[], bool]) -> dict[int, Diagnosis]:
  """Per backend, dtype, mode and device of ``rows``, the first diverging call; settings
  whose calls agree (kind, line, call) share one cause."""
  causes: dict[tuple, Diagnosis] = {}
  found = {}
  for setting, group in _grouped(rows, lambda r: (r.backend, r.dtype, r.mode, r.device)).items():
    if not in_time():
      break
    diagnosis = _divergence(op, params, inputs, seed, *setting)
    if diagnosis is None:
      continue
    key = (diagnosis.kind, diagnosis.file, diagnosis.line, diagnosis.call)
    if key not in causes:
      causes[key] = dataclasses.replace(diagnosis, cause=_cause_id(op.name, label, diagnosis))
    found.update({id(r): causes[key] for r in group})
  return found


def _divergence(op: OpDef, params: dict, inputs, seed: int, backend: str, dtype: str,
                mode: str, device: str) -> Diagnosis | None:
  """The first diverging call of one setting, with the check's inputs and cotangents."""
  try:
    cast = setting.cast_inputs(inputs, compare.dtype_of(dtype))
    if cast is None:
      return None
    outputs, _ = engine._load("numpy").vjp(op, *cast, **params)  # pylint: disable=protected-access
    rng = np.random.default_rng([seed, zlib.crc32(dtype.encode())])  # The check's draw.
    cotangents = [engine._random_like(rng, o)  # pylint: disable=protected-access
                  for o in validation.as_tuple(outputs)]
    return divergence.find_divergence(op, params, cast, cotangents, backend=backend,
                                      dtype=dtype, mode=mode, device=device)
  except Exception:  # pylint: disable=broad-except  # Left to `_unknown`.
    return None


def _cause_id(op: str, label: str, diagnosis: Diagnosis) -> str:
  where = diagnosis.where()
  return f"{op} {label}: {diagnosis.kind}" + (f" at {where}" if where else "")


def _unknown(rows: list[Row], found: dict[int, Diagnosis],
             timed_out: bool) -> dict[int, Diagnosis]:
  """``unknown`` for the rows no diagnosis explains, with the numbers of the worst."""
  left = [r for r in rows if id(r) not in found]
  if not left:
    return {}
  worst = max(left, key=lambda r: -1.0 if r.error is None else
              r.error / (r.tolerance or 1.0) if np.isfinite(r.error) else np.inf)
  raised = worst.error is None  # Every row left raised (or has no number).
  why = ("not diagnosed within the time the op's rows took" if timed_out
         else "it raised, so there is nothing to compare" if raised
         else "no known mistake fits")
  numbers = ("raised" if raised else f"error {worst.error:.2e}"
             + (f" (tolerance {worst.tolerance:.0e})" if worst.tolerance is not None else ""))
  diagnosis = Diagnosis(
      Kind.UNKNOWN, f"{why}; worst row: {worst.check} {worst.backend} {worst.mode} "
      f"{worst.dtype}" + (f" on the variant {worst.variant}" if worst.variant else "")
      + f", {numbers}" + (f": {worst.note}" if worst.note else ""),
      values={"error": worst.error, "tolerance": worst.tolerance},
      cause=f"{worst.op} {worst.params}: unknown" + (" on variants" if worst.variant else ""))
  return {id(r): diagnosis for r in left}


def text(failures: Sequence[Row]) -> list[str] | None:
  """The failing rows by cause: per cause its diagnosis with ``file.py:LINE`` and the
  table of the rows it explains; None where the rows carry no diagnosis."""
  if not any(r.diagnosis for r in failures):
    return None
  groups = _grouped(failures, lambda r: (r.diagnosis.cause if r.diagnosis else "",))
  lines = [f"failing rows by cause ({len(groups)} cause{'s' if len(groups) != 1 else ''}):"]
  for number, ((cause,), rows) in enumerate(groups.items(), 1):
    d = rows[0].diagnosis
    lines.append(f"{number}. {cause or 'not diagnosed'} ({len(rows)} "
                 f"row{'s' if len(rows) != 1 else ''})")
    if d is not None:
      lines.append(f"   {d.message}")
    table = Report(list(rows), 0.0, {}).table(summary=False)
    lines += ["   " + line for line in table.splitlines()] + [""]
  return lines
