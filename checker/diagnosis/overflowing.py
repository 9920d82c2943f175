"""``special_value`` where a dtype below float64 loses a result float64 gives: the op's
program (`program`) run by the NumPy reference in that dtype and in float64 on the check's
inputs and cotangent, and the first ``xp`` call whose output is NaN or inf in the dtype
where float64's is finite (the call that overflows, or divides 0 by 0) named with its line.
"""

from __future__ import annotations

import os
import zlib
from typing import Sequence

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, overflow
from crossgrad.checker.diagnosis import classify, program
from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.checker.rows import setting
from crossgrad.registry import validation
from crossgrad.registry.opdef import OpDef


def diagnose(op: OpDef, params: dict, inputs: Sequence[np.ndarray], dtype: str, seed: int,
             random_like) -> Diagnosis | None:
  """The first call of ``op`` that loses a value in ``dtype``, where its results (outputs,
  then cotangents of the check's random cotangent: ``random_like(rng, output)``) lose one
  float64 gives in the dtype's range; None where they lose none."""
  numpy = base.load("numpy")
  low = setting.cast_inputs(inputs, compare.dtype_of(dtype))
  wide = setting.cast_inputs(inputs, np.dtype(np.float64))
  if low is None or wide is None:
    return None
  with np.errstate(all="ignore"):
    outputs, _ = numpy.vjp(op, *low, **params)
    rng = np.random.default_rng([seed, zlib.crc32(dtype.encode())])  # The check's draw.
    cotangents = [random_like(rng, o) for o in validation.as_tuple(outputs)]
    runs = [program.run(numpy, op, params, x, [None if g is None else g.astype(x_dtype)
                                                 for g in cotangents],
                        mode="eager", device="cpu:0")
            for x, x_dtype in ((low, compare.dtype_of(dtype)), (wide, np.float64))]
  names = [f"output {k}" for k in range(len(validation.as_tuple(outputs)))] + [
      f"d{op.input_names[i]}" for i in op.diff_argnums]
  result = next((lost for lost in map(overflow.first_lost, runs[0].finals, runs[1].finals,
                                      [dtype] * len(names), names) if lost), None)
  if result is None:
    return None
  for call, wide_call in zip(runs[0].tape.calls, runs[1].tape.calls):
    for j, (a, b) in enumerate(zip(call.outputs, wide_call.outputs)):
      lost = overflow.first_lost(a, b, dtype, f"output {j}", within_range=False)
      if lost is not None:
        return _diagnosis(op, call, lost, result, dtype)
  return None


def _diagnosis(op: OpDef, call, lost: overflow.Lost, result: overflow.Lost,
               dtype: str) -> Diagnosis:
  shown = classify.shown(call)
  where = f"{os.path.basename(call.file)}:{call.line}"
  element = f"[{', '.join(map(str, lost.index))}]" if lost.index else ""
  name = result.name[1:] if result.name.startswith("d") else None
  message = (f"in {dtype}, {shown} ({where}, in the {call.phase}) gives {overflow.special(lost.low)} at element "
             f"{element or '[]'} where float64 gives {lost.wide:.3g}, so "
             f"{result.words(dtype)}: compute it in a form that stays within {dtype}'s range "
             f"(from the forward's outputs, or with an exp of a non-positive argument)")
  return Diagnosis(Kind.SPECIAL_VALUE, message, input=name if name in op.input_names else None,
                   file=call.file, line=call.line, call=shown,
                   values={"dtype": dtype, "element": list(lost.index),
                           "value": overflow.special(lost.low), "float64": lost.wide,
                           "result": result.name, "result_element": list(result.index),
                           "phase": call.phase})
