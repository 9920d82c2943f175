"""The ``custom_rule`` rows: each execution and export mode (`Scope.MODE`) and each
transformation mode (`Scope.DEVICE`) uses the op's custom backward (a kernel's own rule), not the
framework's derivative of the forward.

The mode runs a sentinel once more: the op with its backward returning every cotangent
times 2 (exact in floating point), under a name of its own (``<op>.sentinel``) so that no
cache hands back the original; for a kernel, the kernel with its rule scaled likewise (a
backend's ``scaled_kernel``). Where the mode uses the rule, the sentinel's cotangents are
twice the mode's own; where it differentiates the forward instead (Dynamo under
`torch.func.grad`, `tf.custom_gradient` called with keyword arguments) they are the same,
and the row fails. Every execution, export and transformation mode the check runs, the
first device, one dtype (the ``variant`` rows': float64 where the check has it);
higher-order rules are not covered.
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from typing import Any

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, higher_order, round_trips
from crossgrad.checker.report import Check, Row, RowContext, first_line
from crossgrad.checker.rows import setting
from crossgrad.registry import kernels
from crossgrad.registry.opdef import OpDef

FACTOR = 2.0  # A power of two: the scaled cotangents are exact.
_SENTINELS: "weakref.WeakKeyDictionary[OpDef, OpDef]" = weakref.WeakKeyDictionary()
_SCALED: "weakref.WeakKeyDictionary[kernels.Kernel, Any]" = weakref.WeakKeyDictionary()


def sentinel(op: OpDef) -> OpDef:
  """``op`` with its backward's cotangents times `FACTOR`, named ``<op>.sentinel``; one per
  op, so every mode runs the same one (and compiles it once)."""
  found = _SENTINELS.get(op)
  if found is None:
    backward = op.backward

    def scaled(xp, residuals, g, **params):
      cts = backward(xp, residuals, g, **params)
      if not isinstance(cts, (tuple, list)):
        return None if cts is None else cts * FACTOR
      return tuple(None if c is None else c * FACTOR for c in cts)
    found = _SENTINELS[op] = dataclasses.replace(op, name=f"{op.name}.sentinel",
                                                 backward=scaled)
  return found


def _runs_here(run: setting.ModeRun) -> bool:
  context = run.context
  if context.dtype != run.settings.variant_dtype:
    return False
  first = run.first.get(context.mode)
  return _reaches(run.module) and (first is None or first[0] == context.device)


def _reaches(module) -> bool:
  """Whether a sentinel reaches ``module``: not where it runs registered ops only."""
  return not getattr(module, "RUNS_REGISTERED_OPS_ONLY", False)


def rows(run: setting.ModeRun) -> list[Row]:
  """One ``custom_rule`` row: the sentinel's cotangents against twice the mode's own."""
  if not _runs_here(run):
    return []
  target, context = run.target, run.context
  started = time.perf_counter()
  got = _sentinel_results(target, context, run.module, run.evaluate)
  seconds = time.perf_counter() - started
  if isinstance(got, Row):
    return [dataclasses.replace(got, seconds=seconds)]
  return [_verdict(context, got[1], run.results[1], target, seconds)]


def transform_rows(run: setting.DeviceRun) -> list[Row]:
  """One ``custom_rule`` row per transformation mode that ran (``run.transformed``): the
  sentinel's cotangents under the transformation against twice the mode's own."""
  higher = run.target.higher
  if (not run.transformed or not run.first_device or not _reaches(run.module)
      or higher.dtype != run.settings.variant_dtype):
    return []
  chosen = list(run.transformed)
  context = RowContext(higher.op.name, higher.label, run.name, run.device, higher.dtype, "-")
  started = time.perf_counter()
  got = _sentinel_results(run.target, context, run.module, lambda op: (
      higher_order.evaluate_transforms(higher, run.module, run.device, chosen, op=op)))
  seconds = (time.perf_counter() - started) / len(chosen)
  if isinstance(got, Row):
    return [dataclasses.replace(got, mode=t, seconds=seconds) for t in chosen]
  return [_verdict(context.at(mode=t), got[t][1], run.transformed[t][1], run.target, seconds)
          for t in chosen]


def _kernel() -> str | None:
  """The kernel being checked (`base.current_implementation`); None for the emitted op."""
  impl = base.current_implementation()
  return None if impl in (None, kernels.EMITTED) else impl


def _sentinel_results(target: setting.Target, context: RowContext, module, evaluate):
  """``evaluate(sentinel)``: the op's sentinel, or the current kernel with its rule scaled
  run as the sentinel's kernel; a row instead where there are none (``skipped`` where the
  rule is out of reach, failing where the sentinel raised)."""
  impl = _kernel()
  op = sentinel(target.op)
  if impl is None:
    try:
      return evaluate(op)
    except Exception as e:  # pylint: disable=broad-except
      return context.row(Check.CUSTOM_RULE, note="the sentinel (the backward scaled by 2) "
                         f"raised: {first_line(e)}")
  kernel = kernels.lookup(target.op.name, context.backend, impl)
  scale = round_trips.capabilities(module).scaled_kernel
  if kernel not in _SCALED:
    _SCALED[kernel] = None if scale is None else scale(kernel.fn, FACTOR)
  scaled = _SCALED[kernel]
  if scaled is None:
    why = (f"{context.backend} has no scaled_kernel" if scale is None else
           "it is not a rule object (a jax.custom_vjp or custom_jvp, a "
           "torch.autograd.Function or its apply, a tf.custom_gradient function), nor a "
           "function whose closure or globals hold one")
    return context.row(Check.SKIPPED, ok=True, note="custom_rule: the sentinel cannot "
                       f"reach kernel {impl!r}'s own rule ({why})")
  kernels.register_kernel(op, context.backend, scaled, name=impl,
                          unsupported_modes=kernel.unsupported_modes)
  try:
    return evaluate(op)
  except Exception as e:  # pylint: disable=broad-except
    return context.row(Check.CUSTOM_RULE, note=f"the sentinel (kernel {impl!r}'s rule "
                       f"scaled by 2) raised: {first_line(e)}")
  finally:
    kernels.unregister_kernel(op, context.backend, impl)


def _nonzero(x) -> bool:
  x = compare.as_real(np.asarray(x))
  return bool(np.any(np.isfinite(x) & (x != 0)))


def _verdict(context: RowContext, got, own, target: setting.Target, seconds: float) -> Row:
  """The row: ``got`` (the sentinel's cotangents) against `FACTOR` times ``own`` (the
  mode's: the current kernel's rule, else the op's backward)."""
  names = target.names[1]
  present = [i for i, c in enumerate(own) if c is not None and compare.is_inexact(
      np.asarray(c).dtype)]
  if not any(_nonzero(own[i]) for i in present):
    return context.row(Check.SKIPPED, ok=True, note="custom_rule: every cotangent is 0 or "
                       "not finite here: a scaled backward changes nothing to see")
  tolerance = target.bounds.get(Check.VJP, target.tolerance) or compare.tolerance_for(
      context.dtype)
  twice = [np.asarray(own[i]) * FACTOR for i in present]
  result = compare.compare([got[i] for i in present], twice, [names[i] for i in present],
                           tolerance, whole_vector=True, reference="2x the mode's own")
  if result.ok:
    return context.row(Check.CUSTOM_RULE, result.error, tolerance, True,
                       "the custom backward is used: scaled by 2, the cotangents double",
                       seconds, result.ulps)
  unscaled = [names[i] for i in present if _nonzero(own[i]) and compare.compare(
      [got[i]], [own[i]], [names[i]], tolerance, whole_vector=True).ok]
  if unscaled:
    impl = _kernel()
    whose = "" if impl is None else f" (kernel {impl!r}'s rule)"
    note = (f"the custom backward is not used in {context.mode}{whose}: scaled by 2, "
            f"{', '.join(unscaled)} came out unscaled: {context.backend} differentiates the "
            "forward (or another rule) instead in this mode, so a surrogate or a fixed-up "
            "gradient is lost there; see how the op is wrapped in this mode")
  else:
    note = ("with the custom backward scaled by 2 the cotangents are neither twice the "
            f"mode's own nor the same ({result.note}): the mode mixes the rule with "
            "something else")
  return context.row(Check.CUSTOM_RULE, result.error, tolerance, False, note, seconds,
                     result.ulps)
