"""Where a backend first departs from a reference that passes its own check.

`find_divergence` records the op's ``xp`` program (`program`, `recording`) in the
reference and in the failing backend, compares the calls in order and reports the first
whose output differs by more than its inputs' differences explain, with its numerical kind
(`classify`). Eager runs read every intermediate; where eager agrees and a compiled mode
does not, the program is compiled with its intermediates made outputs, and failing that
its prefixes are compiled and bisected (the first call k whose output, as the program's
last, differs).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Sequence

import numpy as np
from absl import logging

from crossgrad.backends.common import base
from crossgrad.checker import compare, round_trips
from crossgrad.checker.diagnosis import classify, program, recording
from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.registry.opdef import OpDef

_EXPLAINED = 10.0  # An output error within this many times its inputs' is theirs.


def find_divergence(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                    cotangents: Sequence[np.ndarray | None], *, backend: str, dtype: str,
                    mode: str, device: str) -> Diagnosis | None:
  """The first ``xp`` call of ``op`` (forward, then backward on ``cotangents``) whose output
  in ``backend`` and ``mode`` differs from the reference's (NumPy's) by more than its
  inputs' differences explain, as a `Diagnosis` of its numerical kind; None where the
  program's results agree within the ``dtype``'s tolerance, and where the program cannot
  be recorded (the reason is logged as a warning).

  ``mode``: eager, a compiled mode of the backend's ``MODES``/``EXTRA_MODES``; for another
  (a transformation such as vmap) only eager recording is compared."""
  try:
    return _find(op, params, inputs, cotangents, backend=backend, dtype=dtype, mode=mode,
                 device=device)
  except Exception as e:  # pylint: disable=broad-except  # A diagnosis never breaks a check.
    logging.warning("no divergence search for %s in %s %s: %s: %s", op.name, backend, mode,
                    type(e).__name__, e)
    return None


def _find(op, params, inputs, cotangents, *, backend, dtype, mode, device):
  tolerance = compare.tolerance_for(dtype)
  module = base.load(backend)
  reference = program.run(base.load("numpy"), op, params, inputs, cotangents, mode="eager",
                          device="cpu:0")
  eager_mode = module.MODES[0]
  eager = program.run(module, op, params, inputs, cotangents, mode=eager_mode, device=device,
                      like=reference.finals)
  found = first_diverging(reference.tape.calls, _values(eager.tape.calls), tolerance)
  path = _other_path(reference.tape.calls, eager.tape.calls)
  if path is not None and (found is None or found[0] >= path):
    return _branches(reference.tape.calls, eager.tape.calls, path, backend)
  if found is not None:
    note = "" if mode == eager_mode else f" (found in {eager_mode}; the row ran {mode})"
    return _diagnosis(found, reference, eager, backend, dtype, device, eager_mode, tolerance,
                      note)
  modes = module.MODES + round_trips.capabilities(module).EXTRA_MODES
  if mode == eager_mode or mode not in modes:
    return None
  return _compiled(op, params, inputs, cotangents, module, reference, tolerance,
                   backend=backend, dtype=dtype, mode=mode, device=device)


def _other_path(reference: Sequence[recording.Call],
                other: Sequence[recording.Call]) -> int | None:
  """The first call where the two runs make different calls (or one stops), else None."""
  for k, (a, b) in enumerate(zip(reference, other)):
    if (a.name, a.file, a.line) != (b.name, b.file, b.line):
      return k
  return None if len(reference) == len(other) else min(len(reference), len(other))


def _branches(reference, other, k: int, backend: str) -> Diagnosis:
  """The runs agree up to call k and then take different paths (a branch on values)."""
  at = (reference[k - 1] if k else reference[0]) if reference else None
  return Diagnosis(
      Kind.UNKNOWN, f"{backend} and the reference agree up to call {k} and then make "
      "different xp calls: the op branches in Python on values that differ; compare the "
      "values its conditions read.", file=at.file if at else None,
      line=at.line if at else None, call=classify.shown(at) if at else None,
      values={"calls_reference": len(reference), "calls_backend": len(other)})


def _values(calls: Sequence[recording.Call]) -> list[list[np.ndarray | None]]:
  return [call.outputs for call in calls]


def _error(actual: np.ndarray | None, expected: np.ndarray | None) -> float:
  """max |a - e| over the largest |e| (inf where shapes or NaN/inf differ, 0 if unknown)."""
  if actual is None or expected is None:
    return 0.0
  actual, expected = np.asarray(actual), np.asarray(expected)
  if not compare.is_inexact(expected.dtype):
    return 0.0 if np.array_equal(actual, expected) else float("inf")
  if actual.shape != expected.shape or np.any(
      np.isfinite(compare.as_real(actual)) != np.isfinite(compare.as_real(expected))):
    return float("inf")
  return compare.max_relative_error(compare.as_real(actual), compare.as_real(expected))


def first_diverging(reference: Sequence[recording.Call], outputs: Sequence[list],
                    tolerance: float) -> tuple[int, int] | None:
  """(call, output) of the first call whose output error exceeds ``tolerance`` and
  `_EXPLAINED` times its inputs' (else the first beyond ``tolerance``); None if none.
  ``outputs``: the other run's outputs of each call, aligned with ``reference``'s."""
  first = None
  errors: dict[tuple[int, int], float] = {}
  for k, (call, actual) in enumerate(zip(reference, outputs)):
    errors.update({(k, j): _error(a, e) for j, (a, e) in enumerate(zip(actual, call.outputs))})
    worst, j = max((errors[k, j], j) for j in range(len(call.outputs))) if call.outputs else (
        0.0, 0)
    if worst <= tolerance:
      continue
    first = first or (k, j)
    if worst > _EXPLAINED * max((errors.get(s, 0.0) for s in call.sources if s), default=0.0):
      return k, j
  return first


def _diagnosis(found: tuple[int, int], reference: program.Run, other: program.Run,
               backend: str, dtype: str, device: str, mode: str, tolerance: float,
               note: str) -> Diagnosis:
  """The diagnosis of output j of call k (``found``); ``mode``: where it was found."""
  k, j = found
  ref_call, call = reference.tape.calls[k], other.tape.calls[k]
  kind, message, extra = classify.classify(ref_call, call, j, dtype, tolerance)
  values = {**extra, "expected": classify.summary(ref_call.outputs[j]),
            "actual": classify.summary(call.outputs[j]),
            "error_map": classify.worst_error_map(other.finals, reference.finals),
            "backend": backend, "dtype": dtype, "device": device, "mode": mode, "output": j,
            "phase": ref_call.phase, "repro": classify.repro_call(ref_call, call)}
  where = f"{os.path.basename(ref_call.file)}:{ref_call.line}"
  text = (f"{backend} departs from the reference at {classify.shown(ref_call)} "
          f"({where}, in the {ref_call.phase}){note}: {message}")
  return Diagnosis(kind, text, file=ref_call.file, line=ref_call.line,
                   call=classify.shown(ref_call), values=values)


def _compiled(op, params, inputs, cotangents, module, reference, tolerance, *, backend,
              dtype, mode, device) -> Diagnosis | None:
  """Eager agrees: the program compiled in ``mode`` with its intermediates as outputs,
  then, where those agree, its prefixes bisected."""
  run = lambda how, like, stop_at=None: program.run(  # noqa: E731
      module, op, params, inputs, cotangents, mode=mode, device=device, how=how,
      stop_at=stop_at, like=like, n_kept=len(like) - (how != "prefix") * len(reference.finals))
  floating = [(k, j) for k, c in enumerate(reference.tape.calls)
              for j, d in enumerate(c.dtypes) if program.is_floating(d)]
  whole = run("intermediates", reference.finals + [reference.tape.calls[k].outputs[j]
                                                   for k, j in floating])
  outputs = [[None] * len(c.outputs) for c in reference.tape.calls]
  for (k, j), value in zip(floating, whole.kept):
    outputs[k][j] = value
  found = first_diverging(reference.tape.calls, outputs, tolerance)
  how = "compiled with every intermediate made an output"
  if found is None:
    found = _bisect(run, reference, tolerance, whole.finals)
    how = "found by bisecting compiled prefixes"
  if found is None:
    if all(_error(a, e) <= tolerance for a, e in zip(whole.finals, reference.finals)):
      return None
    return Diagnosis(Kind.UNKNOWN, f"{backend} {mode} differs from the reference, but no "
                     "prefix of the recorded program does: the difference comes from how "
                     "the whole program compiles (fusion), at no single call.",
                     values={"error_map": classify.worst_error_map(whole.finals, reference.finals),
                             "backend": backend, "dtype": dtype, "mode": mode})
  tape = recording.Tape(calls=[dataclasses.replace(c, outputs=values, args=[
      outputs[s[0]][s[1]] if s else a for a, s in zip(c.args, c.sources)])
      for c, values in zip(reference.tape.calls, outputs)])
  other = program.Run(tape, whole.finals, [])
  return _diagnosis(found, reference, other, backend, dtype, device, mode, tolerance,
                    f" (eager agrees; in {mode}, {how})")


def _bisect(run, reference: program.Run, tolerance: float,
            finals: Sequence[np.ndarray]) -> tuple[int, int] | None:
  """The first call k whose output, compiled as the last of a program truncated there,
  differs: bisected over the calls the first differing result (of ``finals``, the compiled
  program's) depends on, in order (a prefix that differs stays different when extended
  along them)."""
  calls, tape = reference.tape.calls, reference.tape
  bad = [s for s, a, e in zip(tape.final_sources, finals, reference.finals)
         if s is not None and _error(a, e) > tolerance]
  if not bad:
    return None
  candidates = sorted(k for k in _ancestors(calls, bad[0][0])
                      if any(map(program.is_floating, calls[k].dtypes)))

  def errors(k):
    kept = run("prefix", calls[k].outputs, stop_at=k).kept
    return [_error(a, e) for a, e in zip(kept, calls[k].outputs)]

  lo, hi = 0, len(candidates)
  while lo < hi:
    mid = (lo + hi) // 2
    if max(errors(candidates[mid]), default=0.0) > tolerance:
      hi = mid
    else:
      lo = mid + 1
  if lo == len(candidates):
    return None
  found = errors(candidates[lo])
  return candidates[lo], found.index(max(found))


def _ancestors(calls: Sequence[recording.Call], k: int) -> set[int]:
  """Call k and every call whose output it reads, transitively."""
  seen, todo = set(), [k]
  while todo:
    i = todo.pop()
    if i not in seen:
      seen.add(i)
      todo += [s[0] for s in calls[i].sources if s]
  return seen
