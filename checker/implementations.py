"""The implementations the cross-check runs per backend: the emitted op, then each kernel
registered for it (`crossgrad.registry.kernels`), every one against the same reference.

A kernel's rows are the emitted op's (forward, vjp, special values, devices, jvp, second
order, transformations), tagged with its ``impl``; the modes it declares unsupported are
``skipped`` with its reason. In 16-bit dtypes a kernel may round differently from the
emitted op, so its forward and vjp rows judge it as kernel libraries judge theirs (as
FlashAttention's tests do): its error against the float32 reference at most twice the
emitted op's error against that reference (at least one unit in the last place).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Collection, Iterator

import numpy as np

from crossgrad.checker import compare, round_trips
from crossgrad.checker.report import Check
from crossgrad.registry import kernels, validation
from crossgrad.registry.kernels import EMITTED

HALF = ("float16", "bfloat16")  # Where kernels are judged against the emitted op's error.
_EXPORT = "round trips through an export format are checked for the emitted op only"


def scope(impl: str) -> contextlib.AbstractContextManager:
  """Backends' ``get`` returns implementation ``impl`` within the block."""
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  return base.implementation(impl)


def targets(target: Any, backend: str, module: Any, impls: Collection[str] | None,
            evaluate) -> Iterator[tuple[str, Any]]:
  """``(impl, target)`` for each implementation of ``backend`` to check: the emitted op's
  ``target`` (an engine ``_Target``), then each kernel's: the op declaring the kernel's
  unsupported modes (and export modes) as its own, and in 16-bit dtypes the float32
  reference with tolerances from the emitted op's error (``evaluate(module, op, params,
  inputs, cotangent, device=, mode=)`` runs the emitted op)."""
  if impls is None or EMITTED in impls:
    yield EMITTED, target
  for kernel in kernels.kernels(target.op, backend):
    if impls is not None and kernel.name not in impls:
      continue
    declared = {f"{backend}:{mode}": f"kernel {kernel.name!r}: {reason}"
                for mode, reason in kernel.unsupported_modes.items()}
    exports = round_trips.capabilities(module).EXTRA_MODES
    declared.update({f"{backend}:{mode}": _EXPORT for mode in exports})
    op = dataclasses.replace(target.op, unsupported_modes={**target.op.unsupported_modes,
                                                           **declared})
    kernel_target = dataclasses.replace(target, op=op,
                                        higher=dataclasses.replace(target.higher, op=op))
    if compare.dtype_of(target.higher.dtype).name in HALF and not target.is_complex:
      kernel_target = _against_emitted(kernel_target, module, evaluate)
    yield kernel.name, kernel_target


def _against_emitted(target: Any, module: Any, evaluate) -> Any:
  """``target`` comparing forward and vjp with the float32 reference (rounded to the
  dtype) at twice the emitted op's error against it (eager, first device)."""
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  op, params, dtype = target.op, target.params, target.higher.dtype
  wide = [x.astype(np.float32) if compare.is_floating(x.dtype) else x for x in target.inputs]
  outputs, vjp_fn = base.load("numpy").vjp(op, *wide, **params)
  outs = validation.as_tuple(outputs)
  cot = [None if c is None else c.astype(np.float32) for c in target.cotangent]
  cts = vjp_fn(tuple(cot) if isinstance(outputs, tuple) else cot[0])
  narrow = compare.dtype_of(dtype)
  ref_outs = tuple(o.astype(narrow) if compare.is_floating(o.dtype) else o for o in outs)
  ref_cts = tuple(None if c is None else c.astype(narrow) for c in cts)
  with scope(EMITTED):
    got_outs, got_cts = evaluate(module, op, params, target.inputs, target.cotangent,
                                 device=module.devices()[0], mode=module.MODES[0])
  out_names, in_names = target.names
  floor = compare.EPS[dtype]
  bounds = {
      Check.FORWARD: 2 * max(compare.compare(got_outs, ref_outs, out_names, np.inf).error,
                             floor / 2),
      Check.VJP: 2 * max(compare.compare(got_cts, ref_cts, in_names, np.inf,
                                         whole_vector=True).error, floor / 2)}
  return dataclasses.replace(target, outputs=ref_outs, cotangents=ref_cts, bounds=bounds)


RELATIVE_NOTE = ("16-bit kernel: error vs the float32 reference at most 2x the emitted op's "
                 "({:.2e})")


def judged(rows: list, impl: str) -> list:
  """``rows`` of implementation ``impl``, tagged with it."""
  if impl == EMITTED:
    return rows
  return [dataclasses.replace(row, impl=impl) for row in rows]
