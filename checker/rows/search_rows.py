"""The ``search`` rows (`crossgrad.checker.search`): per op and parameter set, where the
check asks for N examples, one row: failing, with the smallest input where the reference
backward is not the derivative and its diagnosis, or passing, with the count."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from crossgrad.checker import search
from crossgrad.checker.report import Check, Row, RowContext
from crossgrad.checker.rows import setting


SHOWN = 8  # The most elements an input's values are shown for.


def _described(op, inputs: Sequence[np.ndarray]) -> str:
  """Each input's shape and, where it is small, its values: ``x (1,) = [5.0]``."""
  return ", ".join(f"{name} {tuple(int(d) for d in x.shape)}"
                   + (f" = {np.asarray(x).tolist()}" if x.size <= SHOWN else "")
                   for name, x in zip(op.input_names, inputs))


def rows(run: setting.ReferenceRun) -> list[Row]:
  """One ``search`` row per op and parameter set where ``run.search`` asks for examples:
  failing with the smallest failing input and its diagnosis, or passing with the count."""
  if not run.search:
    return []
  wide = setting.cast_inputs(run.inputs, np.dtype(np.float64))
  context = RowContext(run.op.name, setting.params_label(run.params), "numpy", "cpu:0",
                       "float64", "eager")
  if wide is None or any(np.iscomplexobj(x) for x in wide):
    return [context.row(Check.SKIPPED, ok=True, note="search: complex inputs are not searched")]
  found = search.smallest_failure(run.op, run.params, wide, run.search, run.seed)
  if found is None:
    return [context.row(Check.SEARCH, ok=True, note=(
        f"{run.search} examples drawn from the sample: the backward is the derivative on "
        "every one the forward takes"))]
  error, tolerance = ((found.fd.error, found.fd.tolerance) if found.fd else (None, None))
  row = context.row(Check.SEARCH, error, tolerance, False, note=(
      f"the smallest failing input of {run.search} examples ({found.name}): "
      f"{_described(run.op, found.inputs)}: {found.diagnosis.message}"))
  diagnosis = dataclasses.replace(found.diagnosis, values={
      **found.diagnosis.values, "variant": found.name,
      "inputs": [x.tolist() for x in found.inputs], "source": search.source_of(run.op)})
  return [dataclasses.replace(row, variant=found.name, diagnosis=diagnosis)]
