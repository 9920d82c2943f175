"""The ``custom_rule`` rows (`Scope.MODE`): each mode uses the op's custom backward (a
kernel's own rule), not the framework's derivative of the forward.

The mode runs a sentinel once more: the op with its backward returning every cotangent
times 2 (exact in floating point), under a name of its own (``<op>.sentinel``) so that no
cache hands back the original; for a kernel, the kernel with its rule scaled likewise (a
backend's ``scaled_kernel``). Where the mode uses the rule, the sentinel's cotangents are
twice the mode's own; where it differentiates the forward instead (Dynamo under
`torch.func.grad`, `tf.custom_gradient` called with keyword arguments) they are the same,
and the row fails. Every execution mode of the backend, the first device, one dtype (the
``variant`` rows': float64 where the check has it); transformation and export modes, and
higher-order rules, are not covered.
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from typing import Any

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, round_trips
from crossgrad.checker.report import Check, Row, first_line
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
  if context.dtype != run.settings.variant_dtype or context.mode not in run.module.MODES:
    return False
  if getattr(run.module, "RUNS_REGISTERED_OPS_ONLY", False):  # No sentinel reaches it.
    return False
  first = run.first.get(context.mode)
  return first is None or first[0] == context.device


def rows(run: setting.ModeRun) -> list[Row]:
  """One ``custom_rule`` row: the sentinel's cotangents against twice the mode's own."""
  if not _runs_here(run):
    return []
  target, context = run.target, run.context
  impl = base.current_implementation()
  started = time.perf_counter()
  op = sentinel(target.op)
  kernel = None if impl in (None, kernels.EMITTED) else impl
  if kernel is None:
    try:
      got = run.evaluate(op)[1]
    except Exception as e:  # pylint: disable=broad-except
      got = context.row(Check.CUSTOM_RULE, note="the sentinel (the backward scaled by 2) "
                        f"raised: {first_line(e)}")
  else:
    got = _kernel_cotangents(run, op, kernel)
  if isinstance(got, Row):
    return [dataclasses.replace(got, seconds=time.perf_counter() - started)]
  return [_verdict(run, got, kernel, time.perf_counter() - started)]


def _kernel_cotangents(run: setting.ModeRun, op: OpDef, impl: str):
  """The cotangents of kernel ``impl`` with its rule scaled, run as ``op``'s kernel; a row
  instead where there are none (``skipped`` where the rule is out of reach)."""
  context = run.context
  kernel = kernels.lookup(run.target.op.name, context.backend, impl)
  scale = round_trips.capabilities(run.module).scaled_kernel
  if kernel not in _SCALED:
    _SCALED[kernel] = None if scale is None else scale(kernel.fn, FACTOR)
  scaled = _SCALED[kernel]
  if scaled is None:
    why = (f"{context.backend} has no scaled_kernel" if scale is None else
           "it is neither a jax.custom_vjp or custom_jvp, nor a torch.autograd.Function "
           "or its apply, nor a function whose closure holds one")
    return context.row(Check.SKIPPED, ok=True, note="custom_rule: the sentinel cannot "
                       f"reach kernel {impl!r}'s own rule ({why})")
  kernels.register_kernel(op, context.backend, scaled, name=impl,
                          unsupported_modes=kernel.unsupported_modes)
  try:
    return run.evaluate(op)[1]
  except Exception as e:  # pylint: disable=broad-except
    return context.row(Check.CUSTOM_RULE, note=f"the sentinel (kernel {impl!r}'s rule "
                       f"scaled by 2) raised: {first_line(e)}")
  finally:
    kernels.unregister_kernel(op, context.backend, impl)


def _nonzero(x) -> bool:
  x = compare.as_real(np.asarray(x))
  return bool(np.any(np.isfinite(x) & (x != 0)))


def _verdict(run: setting.ModeRun, got, kernel: str | None, seconds: float) -> Row:
  """The row: ``got`` (the sentinel's cotangents) against `FACTOR` times the mode's own
  (``kernel``'s rule, else the op's backward, scaled)."""
  target, context = run.target, run.context
  own = run.results[1]
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
    whose = "" if kernel is None else f" (kernel {kernel!r}'s rule)"
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
