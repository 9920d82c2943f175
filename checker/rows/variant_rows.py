"""The ``variant`` rows (`crossgrad.checker.variants`): on each input variant the op takes,
the reference backward against finite differences, float64 (`Scope.REFERENCE`), and each
backend's outputs and cotangents against the reference (`Scope.MODE`: eager and one compiled
mode by default, the first device, one dtype: float64 where the check has it)."""

from __future__ import annotations

import dataclasses
import time
import zlib

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, finite_diff, round_trips, variants
from crossgrad.checker.report import Check, Row, RowContext, first_line
from crossgrad.checker.rows import finite_differences, setting
from crossgrad.registry import validation

SHOWN = 6  # Rejected variants a skipped row names.


def _sample_outputs(reference, op, params, inputs):
  """The reference's outputs on the sample; None where it raises (the sample's own rows
  say so)."""
  try:
    with np.errstate(all="ignore"):
      return reference.vjp(op, *inputs, **params)[0]
  except Exception:  # pylint: disable=broad-except
    return None


def reference(run: setting.ReferenceRun) -> list[Row]:
  """Per variant the op takes, its ``fd`` rows as ``variant`` rows; one ``skipped`` row
  naming those it does not take."""
  op, params = run.op, run.params
  wide = setting.cast_inputs(run.inputs, np.dtype(np.float64))
  if run.variants is None or wide is None or any(np.iscomplexobj(x) for x in wide):
    return []
  numpy = base.load("numpy")
  sample_outputs = _sample_outputs(numpy, op, params, wide)
  if sample_outputs is None:
    return []
  rows, rejected = [], []
  for variant in variants.derive(op, wide, params=params):
    varied = variant.params_of(params)
    taken, result, why = variants.accepts(numpy, op, varied, variant, sample_outputs)
    if taken and variants.kinked(numpy, op, varied, variant, result[0], run.seed):
      taken, why = False, "a kink or tie there"
    if not taken:
      rejected.append(f"{variant.name} ({why})")
      continue
    rows += [dataclasses.replace(r, check=Check.VARIANT, variant=variant.name,
                                 params=setting.params_label(params))  # The op's set.
             for r in finite_differences.finite_difference_rows(op, varied, variant.inputs,
                                                                run.seed)
             if r.check == Check.FD]
  if rejected:
    context = RowContext(op.name, setting.params_label(params), "numpy", "cpu:0", "-", "eager")
    more = f" and {len(rejected) - SHOWN} more" if len(rejected) > SHOWN else ""
    rows.append(context.row(Check.SKIPPED, ok=True, note=(
        f"variants the op does not take ({len(rejected)}): "
        + ", ".join(rejected[:SHOWN]) + more)))
  return rows


@dataclasses.dataclass(frozen=True)
class Case:
  """One variant the op takes, in the target's dtype: a cotangent and the reference's
  outputs and cotangents for it."""

  variant: variants.Variant
  cotangent: list
  outputs: tuple
  cotangents: tuple


def cases(target: setting.Target, seed: int, chosen: str) -> list[Case]:
  """The target's variant cases for the backends (`variants.for_backends` of those the op
  takes), made once and shared by every backend (and kernel) of the target; a variant whose
  reference backward raises has none (its reference row fails)."""
  if "cases" in target.variant_cases:
    return target.variant_cases["cases"]
  numpy, op, params = base.load("numpy"), target.op, target.params
  taken = []
  for variant in variants.derive(op, target.inputs, scaled=target.higher.dtype == "float64"):
    accepted, result, _ = variants.accepts(numpy, op, params, variant, target.outputs)
    if accepted:
      taken.append((variant, result))
  chosen_ones = {id(v) for v in variants.for_backends([v for v, _ in taken], chosen)}
  found = []
  for variant, result in taken:
    if id(variant) not in chosen_ones:
      continue
    outputs, vjp_fn = result
    outs = validation.as_tuple(outputs)
    rng = np.random.default_rng([seed, zlib.crc32(variant.name.encode())])
    cotangent = [finite_diff.uniform(rng, o.shape, o.dtype) if compare.is_inexact(o.dtype)
                 else None for o in outs]
    try:
      with np.errstate(all="ignore"):
        cts = vjp_fn(tuple(cotangent) if isinstance(outputs, tuple) else cotangent[0])
    except Exception:  # pylint: disable=broad-except  # The reference's row fails.
      continue
    found.append(Case(variant, cotangent, outs, tuple(cts)))
  found += _zero_cotangents(target)
  target.variant_cases["cases"] = found
  return found


def _zero_cotangents(target: setting.Target) -> list[Case]:
  """The sample with cotangents exactly 0 at every other element, and (several outputs)
  with one output's cotangent all zeros: a backward must give finite cotangents, the
  reference's, where a framework passes zeros (or none) upstream."""
  cotangent = [None if c is None else np.asarray(c) for c in target.cotangent]
  chosen = []
  if any(c is not None and c.size > 1 for c in cotangent):
    holes = []
    for c in cotangent:
      holes.append(None if c is None else c.copy())
      if c is not None:
        holes[-1].reshape(-1)[::2] = 0
    chosen.append(("cotangent 0 at every other element", holes))
  if sum(c is not None for c in cotangent) > 1:
    chosen += [(f"output {k}'s cotangent all zeros",
                [np.zeros_like(c) if k == j and c is not None else c
                 for j, c in enumerate(cotangent)])
               for k, c in enumerate(cotangent) if c is not None]
  found = []
  for name, g in chosen:
    try:
      with np.errstate(all="ignore"):
        outputs, vjp_fn = base.load("numpy").vjp(target.op, *target.inputs, **target.params)
        cts = vjp_fn(tuple(g) if isinstance(outputs, tuple) else g[0])
    except Exception:  # pylint: disable=broad-except  # The sample's rows say why.
      continue
    found.append(Case(variants.Variant(name, list(target.inputs), "cotangent"), g,
                      validation.as_tuple(outputs), tuple(cts)))
  return found


def _layouts(run: setting.ModeRun) -> list[Case]:
  """The sample in each memory layout the backend offers beyond its default (torch:
  non-contiguous views): a kernel reading its inputs' storage flat is wrong there."""
  target = run.target
  return [Case(variants.Variant(f"{layout} inputs and cotangents (non-contiguous views)",
                                list(target.inputs), "layout", layout=layout),
               list(target.cotangent), target.outputs, target.cotangents)
          for layout in round_trips.capabilities(run.module).LAYOUTS]


def _runs_here(run: setting.ModeRun) -> bool:
  chosen, context = run.settings.variants, run.context
  if chosen is None or context.dtype != run.settings.variant_dtype:
    return False
  if context.mode not in variants.modes(run.module, chosen):
    return False
  first = run.first.get(context.mode)
  return first is None or first[0] == context.device


def backend(run: setting.ModeRun) -> list[Row]:
  """One ``variant`` row per variant case: the backend's outputs and cotangents against the
  reference's."""
  if not _runs_here(run):
    return []
  target, context = run.target, run.context
  output_names, input_names = target.names
  narrowed = round_trips.narrows_integers(run.module, context.mode)
  rows = []
  for case in cases(target, run.settings.seed, run.settings.variants) + _layouts(run):
    if case.variant.family == "cotangent" and not variants.finite(
        [c for c in case.cotangents if c is not None]):
      rows.append(dataclasses.replace(context.row(
          Check.VARIANT, None, target.tolerance, False, "the reference's cotangents are not "
          "finite where the cotangent is 0: a backward must not divide by g"),
          variant=case.variant.name))
      continue
    started = time.perf_counter()
    try:
      layout = {"layout": case.variant.layout} if case.variant.layout else {}
      outputs, cts = run.module.evaluate(target.op, target.params, case.variant.inputs,
                                         case.cotangent, device=context.device,
                                         mode=context.mode, **layout)
    except Exception as e:  # pylint: disable=broad-except
      rows.append(dataclasses.replace(
          context.row(Check.VARIANT, None, target.tolerance, False, first_line(e),
                      time.perf_counter() - started), variant=case.variant.name))
      continue
    results = []
    for check, got, want, names in ((Check.FORWARD, outputs, case.outputs, output_names),
                                    (Check.VJP, cts, case.cotangents, input_names)):
      bound = target.bounds.get(check, target.tolerance)
      result = compare.compare(compare.narrowing_undone(narrowed, got, want), want, names,
                               bound, bitwise=target.bitwise,
                               whole_vector=check == Check.VJP)
      results.append((result, bound, check))
    worst = max(results, key=lambda r: (not r[0].ok, r[0].error / max(r[1], 1e-300)))
    result, bound, check = worst
    note = f"{check}: {result.note}" if result.note else "forward and vjp"
    rows.append(dataclasses.replace(
        context.row(Check.VARIANT, result.error, bound, all(r[0].ok for r in results), note,
                    time.perf_counter() - started, result.ulps), variant=case.variant.name))
  return rows
