"""Diagnoses of failing ``variant`` rows (`crossgrad.checker.variants`), each naming its
variant: a backward returning a cotangent of another shape than its input (``shape``, also
on the sample), the mistake a wrong backward makes on the variant (`backward`), or the first
call where a backend departs from the reference there (`divergence`)."""

from __future__ import annotations

import dataclasses
import inspect
import traceback
import zlib
from typing import Callable, Sequence

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, finite_diff, variants
from crossgrad.checker.diagnosis import backward, divergence, source_lines
from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.checker.report import Row
from crossgrad.checker.rows import setting
from crossgrad.registry import broadcasting, validation
from crossgrad.registry.opdef import OpDef

SHAPE_ERROR = "cotangent shape differs from the input's"  # `validation.check_cotangents`.


def _shape(shape) -> str:
  return str(tuple(int(d) for d in shape))


def shape_mismatch(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                   variant: str = "") -> Diagnosis | None:
  """``shape`` where the backward (run unchecked, on cotangents of ones) returns a cotangent
  of another shape than its input, at the line that makes it; None where every shape fits."""
  xp = base.load("numpy").xp
  with np.errstate(all="ignore"):
    outputs, residuals = op.forward(xp, *inputs, **params)
    outs = validation.as_tuple(outputs)
    g = [np.ones_like(np.asarray(o)) if compare.is_inexact(np.asarray(o).dtype) else None
         for o in outs]
    cts = op.backward(xp, residuals, tuple(g) if isinstance(outputs, (tuple, list)) else g[0],
                      **params)
  cts = tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)
  for i in op.diff_argnums:
    if i >= len(cts) or cts[i] is None or np.shape(cts[i]) == np.shape(inputs[i]):
      continue
    name, got, want = op.input_names[i], np.shape(cts[i]), np.shape(inputs[i])
    fix = ("sum it over the broadcast axes (xp.unbroadcast(ct, " + name + "))"
           if broadcasting.broadcast_shape(want, got) == tuple(got)
           else "return an array of the input's shape")
    file, line = source_lines.cotangent_line(source_lines.user_functions(op)[1], i)
    where = f"on the variant {variant}: " if variant else ""
    return Diagnosis(Kind.SHAPE, f"{where}the cotangent of {name} has shape {_shape(got)}, "
                     f"the input {_shape(want)}: {fix}", input=name, file=file, line=line,
                     values={"cotangent_shape": list(got), "input_shape": list(want)})
  return None


def raised(op: OpDef, e: Exception, variant: str, input_name: str | None) -> Diagnosis:
  """``raised``: the backward raises on a variant the forward takes, at its deepest line in
  the backward's file."""
  backward_file = inspect.getsourcefile(inspect.unwrap(source_lines.user_functions(op)[1]))
  frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == backward_file]
  file, line = (frames[-1].filename, frames[-1].lineno) if frames else (backward_file, None)
  text = str(e).strip().splitlines()
  return Diagnosis(Kind.RAISED, f"on the variant {variant}: the backward raises "
                   f"{type(e).__name__}: {text[0] if text else ''} on inputs the forward "
                   "takes; make it follow the forward's shapes", input=input_name, file=file,
                   line=line)


def diagnose(op: OpDef, params: dict, sample: Sequence[np.ndarray], rows: Sequence[Row],
             seed: int, in_time: Callable[[], bool]) -> dict[int, Diagnosis]:
  """Diagnoses of failing ``variant`` rows by row id, per variant (rebuilt from the sample
  by its name), where one is found."""
  groups: dict[str, list[Row]] = {}
  for row in rows:
    groups.setdefault(row.variant, []).append(row)
  found = {}
  for name, group in groups.items():
    if not in_time():
      break
    diagnosis = _variant_cause(op, params, sample, name, group, seed, in_time)
    if diagnosis is not None:
      diagnosis = dataclasses.replace(diagnosis, values={**diagnosis.values, "variant": name})
      found.update({id(r): diagnosis for r in group})
  return found


def _named(variant: str, dtype: str, op: OpDef, sample,
           params: dict) -> variants.Variant | None:
  cast = setting.cast_inputs(sample, compare.dtype_of(dtype))
  if cast is None:
    return None
  return next((v for v in variants.derive(op, cast, params=params) if v.name == variant),
              None)


def _variant_cause(op, params, sample, name, rows, seed, in_time) -> Diagnosis | None:
  wide = _named(name, "float64", op, sample, params)
  if wide is None:
    return None
  params = wide.params_of(params)
  try:
    found = shape_mismatch(op, params, wide.inputs, name)
  except Exception as e:  # pylint: disable=broad-except  # The backward raises there.
    found = raised(op, e, name, wide.input)
  if found is None and any(r.backend == "numpy" for r in rows):
    try:
      found = backward.diagnose(op, params, wide.inputs, seed, in_time)
    except Exception:  # pylint: disable=broad-except
      found = None
    if found is not None:
      found = dataclasses.replace(found, message=f"on the variant {name}: {found.message}")
  if found is None:
    found = next((d for r in rows if r.backend != "numpy" and r.impl == "emitted"
                  and r.error is not None
                  for d in [_divergence(op, params, sample, name, r, seed)] if d), None)
  return found


def _divergence(op, params, sample, name, row: Row, seed: int) -> Diagnosis | None:
  """The first diverging call of a backend's variant row, on its inputs and cotangent."""
  variant = _named(name, row.dtype, op, sample, params)
  if variant is None:
    return None
  try:
    outputs, _ = base.load("numpy").vjp(op, *variant.inputs, **params)
  except Exception:  # pylint: disable=broad-except
    return None
  rng = np.random.default_rng([seed, zlib.crc32(name.encode())])  # The row's draw.
  cotangents = [finite_diff.uniform(rng, o.shape, o.dtype) if compare.is_inexact(o.dtype)
                else None for o in validation.as_tuple(outputs)]
  found = divergence.find_divergence(op, params, variant.inputs, cotangents,
                                     backend=row.backend, dtype=row.dtype, mode=row.mode,
                                     device=row.device)
  return found and dataclasses.replace(found, message=f"on the variant {name}: {found.message}")
