"""The check that decides each definition's status: the written module imported, each op
cross-checked in its original's framework (eager and a compiled mode by default), its
original registered there as the kernel ``"original"``.

* ``ported``: every row passes; the original's rows compare it with the port's NumPy
  reference, so the port equals the original.
* ``original_wrong``: declared exact (``GRADIENTS``), the port equals the original but
  its backward is not the forward's derivative (the ``fd`` row fails): a bug in the
  user's code, with the check's diagnosis.
* ``refused``: a construct the translator could not carry, or the port differs from the
  original (a failing row of the original, or the port cannot be built): never written
  as ported.

Each status is proved twice with the same generated code: at the sample, and at a second
sample drawn from the same ``SAMPLES`` entry with its arrays' axes resized
(`crossgrad.port.resize`; the result's ``second_sample`` says how, or why there is none).

Undeclared, a backward that is not the forward's derivative is ported as ``declared``
and the result says so with the diagnosis; declared ``surrogate``, it is ``declared``
from the start (compared across frameworks, no finite differences).
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Mapping, Sequence

import numpy as np

from crossgrad.checker import engine
from crossgrad.checker import finite_diff
from crossgrad.checker import selection
from crossgrad.checker.diagnosis import causes
from crossgrad.checker.report import Check
from crossgrad.port import emit
from crossgrad.port import resize
from crossgrad.port.definition import Definition
from crossgrad.registry import errors
from crossgrad.registry import kernels
from crossgrad.registry import op_registry

PORTED, ORIGINAL_WRONG, REFUSED = "ported", "original_wrong", "refused"
# The compiled mode each framework's check runs besides eager.
COMPILED = {"torch": "compile", "jax": "jit", "tensorflow": "jit"}
_FROM_BACKWARD = (Check.FD, Check.JVP, Check.SECOND_ORDER)
_ORIGINAL_HIGHER = "original_higher"  # Internal: only the original's higher orders fail.
_ORIGINAL_RAISES = "original_raises"  # Internal: only the original fails, raising, compiled.
_NOT_LINEAR = "not_linear"  # Internal: JAX cannot transpose the port's backward.
NOT_LINEAR_NOTE = ("the backward is not linear in its cotangent (gradient clipping): the "
                   "port's JAX op is a jax.custom_vjp, without forward mode (jax:jvp "
                   "declared unsupported on the op)")
_HIGHER = {
    "second_order": "torch differentiates an autograd.Function's backward with the tensors "
                    "it saved from inside its forward as constants (they carry no history), "
                    "so its second derivatives are not the op's",
    "jvp": "its forward-mode rule is not the op's derivative"}
UNDECLARED_NOTE = ("the backward is not the forward's derivative: ported as a declared "
                   "gradient (declare it exact in GRADIENTS if this is a bug)")


@dataclasses.dataclass
class Result:
  """One definition's outcome (a row of the report's ``definitions``)."""
  definition: Definition
  status: str
  op: str | None = None
  module: str | None = None
  reasons: list[dict] = dataclasses.field(default_factory=list)
  seconds: float = 0.0
  gradient: str | None = None
  report: Any = None  # The cross-check's `Report` (None where it did not run).
  second_sample: str | None = None  # How the second sample's shapes were derived.

  def as_json(self) -> dict:
    d = self.definition
    return {"name": d.name, "framework": d.framework, "file": d.file, "line": d.line,
            "status": self.status, "op": self.op, "module": self.module,
            "gradient": self.gradient, "reasons": self.reasons,
            "second_sample": self.second_sample, "seconds": round(self.seconds, 3)}


def gradient_kind(declared: str | None) -> str:
  """The `OpDef` gradient the port is first checked as: ``declared`` for a surrogate
  (its function is not known), ``exact`` otherwise."""
  if declared not in (None, "exact", "surrogate"):
    raise errors.CrossgradError("unknown gradient kind in GRADIENTS", argument="GRADIENTS",
                            expected="'exact' or 'surrogate'", actual=repr(declared))
  return "declared" if declared == "surrogate" else "exact"


@dataclasses.dataclass(frozen=True)
class CheckSettings:
  """What each port's check covers: ``modes`` None means eager and `COMPILED`; ``impls``
  None means the port and the original (`cg.cross_check`'s ``impls``)."""
  backends: Sequence[str] | None = None
  modes: Sequence[str] | None = None
  dtypes: Sequence[str] = ("float32", "float64")
  seed: int = 0
  impls: Sequence[str] | None = None


def prove(definitions: Sequence[Definition], *, source_path: str, out_dir: str,
          declared: Mapping[str, str], samples_path: str | None = None,
          settings: CheckSettings = CheckSettings()) -> list[Result]:
  """Writes the module of ``definitions`` and checks each op in it (see the module's
  docstring); ``declared``: ``GRADIENTS`` of the source (name -> "exact"/"surrogate")."""
  start = time.perf_counter()
  kinds = {d.name: gradient_kind(declared.get(d.name)) for d in definitions}
  stem = os.path.splitext(os.path.basename(source_path))[0]
  results = {d.name: Result(d, REFUSED, reasons=[r.as_json() for r in d.refusals])
             for d in definitions}
  live = [d for d in definitions if not d.refused]
  pending, notes = [d.name for d in live], {d.name: [] for d in live}
  path = None
  for _ in range(3):  # A round may declare what the next one checks differently.
    path = _written(live, results, source_path, out_dir, kinds, samples_path)
    again = []
    for name in pending:
      result = results[name]
      d = result.definition
      if result.status == REFUSED and result.reasons:
        continue
      t0 = time.perf_counter()
      op = op_registry.get(emit.op_name(stem, d))
      _judge(result, d, _check(op, d.framework, settings))
      redo = _redeclare(result, d, kinds, name in declared, notes[name])
      if not redo and result.status in (PORTED, ORIGINAL_WRONG):
        redo = _second(result, d, op, settings, kinds, name in declared, notes[name])
      result.seconds += time.perf_counter() - t0
      if redo:
        again.append(name)
    pending = again
    if not pending:
      break
  for name in pending:  # Still undecided after the last round: never called ported.
    results[name].status = REFUSED
    results[name].reasons = [{"line": results[name].definition.line, "call": name,
                              "why": "its check did not settle (rows still failing)"}]
  failed = [d for d in live if results[d.name].status == REFUSED]
  if failed:  # Written for their check, refused by it: the module is written without them.
    for d in failed:
      if emit.op_name(stem, d) in op_registry.names():
        op_registry.unregister(emit.op_name(stem, d))
    path = _written(live, results, source_path, out_dir, kinds, samples_path)
  for d in live:
    result = results[d.name]
    if result.status != REFUSED:
      result.op, result.module, result.gradient = emit.op_name(stem, d), path, kinds[d.name]
      result.reasons = notes[d.name] + result.reasons
  for result in results.values():
    d = result.definition
    result.reasons += [{"line": d.line, "call": d.original, "why": n} for n in d.notes]
  share = (time.perf_counter() - start - sum(r.seconds for r in results.values())) / max(
      len(definitions), 1)
  for result in results.values():
    result.seconds += share  # Translation, writing and importing, shared out.
  return [results[d.name] for d in definitions]


def _redeclare(result: Result, d: Definition, kinds: dict[str, str], declared: bool,
               notes: list[dict]) -> bool:
  """Whether the op is to be written differently and checked again: an undeclared
  gradient that is not the derivative becomes ``declared``; higher-order rows that fail
  for the original alone become modes it cannot run (declared on its kernel)."""
  if result.status == ORIGINAL_WRONG and not declared and kinds[d.name] == "exact":
    kinds[d.name] = "declared"
    notes += [{**r, "why": f"{UNDECLARED_NOTE}: {r['why']}"} for r in result.reasons]
    return True
  if result.status == _NOT_LINEAR:
    d.op_unsupported_modes = {**d.op_unsupported_modes, "jax:jvp": NOT_LINEAR_NOTE}
    notes.append({"line": d.backward_line or d.line, "call": "backward",
                  "why": NOT_LINEAR_NOTE})
    return True
  if result.status == _ORIGINAL_RAISES:
    added = {str(r.mode): f"the original raises there ({r.dtype}): {r.note}"[:300]
             for r in result.report.failures}
    d.unsupported_modes = {**d.unsupported_modes, **added}
    notes.append({"line": d.line, "call": d.original, "why": "declared unsupported on the "
                  "original: " + "; ".join(f"{m}: {r}" for m, r in added.items())})
    return True
  if result.status == _ORIGINAL_HIGHER:
    added = {}
    for row in result.report.failures:
      mode = str(row.check) if row.check == Check.JVP else "second_order"
      added[mode] = (f"the original's {row.check} differs from the op's (error "
                     f"{row.error:.3g}): " + _HIGHER[mode])
    d.unsupported_modes = {**d.unsupported_modes, **added}
    notes.append({"line": d.line, "call": d.original, "why": "declared unsupported on the "
                  "original: " + "; ".join(f"{m}: {r}" for m, r in added.items())})
    return True
  return False


def _second(result: Result, d: Definition, op, settings: CheckSettings,
            kinds: dict[str, str], declared: bool, notes: list[dict]) -> bool:
  """The same check of the same generated code at a second sample (`crossgrad.port.resize`:
  every axis grown, else the leading ones, where the original runs on it): an original
  wrong there is `ORIGINAL_WRONG`, any other status differing from the first sample's
  refuses the port. True where the check is to be run
  again (modes newly declared unsupported on the original)."""
  axes = next((a for a in resize.DESCRIPTIONS if _original_runs(d, op, a)), None)
  if axes is None:
    result.second_sample = ("none: the original raises on the sample drawn with resized "
                            "axes (" + " or ".join(resize.DESCRIPTIONS.values()) + ")")
    return False
  result.second_sample = resize.DESCRIPTIONS[axes]
  second = Result(d, REFUSED)
  variant = dataclasses.replace(op, sample=resize.resized_sample(op.sample, axes))
  _judge(second, d, _check(variant, d.framework, settings))
  if _redeclare(second, d, kinds, declared, notes):
    return True
  if second.status == result.status:
    return False
  where = f"at the second sample ({result.second_sample}): "
  if second.status == ORIGINAL_WRONG:  # Equal to the original, which is wrong at those shapes.
    result.status = ORIGINAL_WRONG
    result.reasons = [{**r, "why": (where + r["why"])[:600]} for r in second.reasons]
    return False
  why = "; ".join(r["why"] for r in second.reasons) or second.status
  result.status = REFUSED
  result.reasons = [{"line": d.line, "call": d.original, "why": (where + why)[:500]}]
  return False


def _original_runs(d: Definition, op, axes: str) -> bool:
  """Whether the original runs on ``op``'s sample drawn with ``axes`` resized."""
  kernel = kernels.lookup(op.name, d.framework, emit.ORIGINAL)
  params = dict(op.param_sets[0]) if op.param_sets else {}
  try:
    inputs = resize.resized_sample(op.sample, axes)(np.random.default_rng(0))
    kernel.fn(*[_CONVERT[d.framework](np.asarray(a)) for a in inputs], **params)
  except Exception:  # pylint: disable=broad-except
    return False
  return True


def _to_torch(a):
  import torch  # pylint: disable=g-import-not-at-top
  return torch.as_tensor(a)


def _to_jax(a):
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  return jnp.asarray(a)


def _to_tensorflow(a):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.convert_to_tensor(a)


_CONVERT = {"torch": _to_torch, "jax": _to_jax, "tensorflow": _to_tensorflow}


def _written(live: list[Definition], results: dict[str, Result], source_path: str,
             out_dir: str, kinds: Mapping[str, str], samples_path: str | None):
  """Writes and imports the module of the definitions not refused; one whose op cannot
  be built (its import raises) is refused with the error, and the rest written again."""
  stem = os.path.splitext(os.path.basename(source_path))[0]
  while True:
    kept = [d for d in live if results[d.name].status != REFUSED or not results[d.name].reasons]
    for d in kept:
      if emit.op_name(stem, d) in op_registry.names():
        op_registry.unregister(emit.op_name(stem, d))
    path = emit.write(kept, source_path=source_path, out_dir=out_dir, gradients=kinds,
                      samples_path=samples_path)
    if path is None:
      return None
    try:
      selection.load_module(path, argument="the written module")
      return path
    except Exception as e:  # pylint: disable=broad-except
      culprit = _culprit(kept, e, stem)
      results[culprit.name].reasons = [{
          "line": culprit.line, "call": culprit.original,
          "why": f"the port could not be built: {type(e).__name__}: {e}"[:400]}]


def _culprit(kept: Sequence[Definition], error: Exception, stem: str) -> Definition:
  """The definition whose op the import failed on (named in the error), else the first."""
  text = str(error)
  for d in kept:
    if emit.op_name(stem, d) in text or f"{emit._snake(d.name)}_" in text:  # pylint: disable=protected-access
      return d
  return kept[0]


def _check(op, framework: str, settings: CheckSettings):
  modes = settings.modes or ("eager", COMPILED[framework])
  # The sample's rows only: variants test the original's backward beyond the shapes it
  # was written for, not that the port equals it.
  report = engine.cross_check([op], backends=settings.backends or [framework], modes=modes,
                          dtypes=settings.dtypes, seed=settings.seed, special=False,
                          impls=settings.impls, variants="none")
  return causes.diagnose(report, [op], seed=settings.seed)


def _judge(result: Result, d: Definition, report) -> None:
  """Sets ``result``'s status and reasons from the check's ``report``."""
  result.report = report
  failing = report.failures
  if report.ok:
    result.status, result.reasons = PORTED, []
    return
  if all(r.impl == emit.ORIGINAL and r.check in (Check.JVP, Check.SECOND_ORDER)
         for r in failing):
    result.status, result.reasons = _ORIGINAL_HIGHER, []
    return
  if "jax:jvp" not in d.op_unsupported_modes and any(
      finite_diff.NOT_LINEAR in r.note for r in failing):
    result.status, result.reasons = _NOT_LINEAR, []
    return
  if all(r.impl == emit.ORIGINAL and r.error is None and r.note and r.mode != "eager"
         for r in failing):  # The original cannot run there (e.g. graph-mode dtypes).
    result.status, result.reasons = _ORIGINAL_RAISES, []
    return
  unchecked = [r for r in failing if r.check in (Check.SAMPLE, Check.REFERENCE)]
  if unchecked:  # No sample, or the port's NumPy reference raised on it.
    r = unchecked[0]
    result.status = REFUSED
    result.reasons = [{"line": d.line, "call": d.original,
                       "why": f"the check could not run ({r.check} row): {r.note}"[:400]}]
    return
  differs = [r for r in failing if r.check not in _FROM_BACKWARD]
  if differs:
    r = differs[0]
    who = "the original" if r.impl == emit.ORIGINAL else "the port"
    result.status = REFUSED
    result.reasons = [{"line": d.line, "call": d.original,
                       "why": f"{who} differs from the port's NumPy reference "
                              f"({r.check} row, {r.backend} {r.mode} {r.dtype}: "
                              f"{r.note or f'error {r.error}'})"[:400]}]
    return
  fd = next((r for r in failing if r.check == Check.FD), failing[0])
  diagnosis = fd.diagnosis
  line = d.backward_line or d.line
  why = (f"{diagnosis.kind}: {diagnosis.message}" if diagnosis is not None
         else f"{fd.check} row fails ({fd.note or f'error {fd.error}'})")
  result.status = ORIGINAL_WRONG
  result.reasons = [{"line": line, "call": "backward",
                     "why": f"{why} (at {os.path.basename(d.file)}:{line})"[:500],
                     "diagnosis": diagnosis.to_dict() if diagnosis is not None else None}]
