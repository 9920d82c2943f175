r"""Eager cost of the standard's array object in torch op bodies.

  python -m crossgrad.benchmarks.torch_array_overhead [--sizes=1000] [--ops=leaky_relu]

For every registry op with a hand-written baseline (its inputs): one eager train step, the
gradient of ``sum(op(inputs) * w)``, with the op's forward and backward as crossgrad runs
them (`torch.array_object.Array` on a signature's first call, then plain tensors where
`torch.plain_bodies` finds that it changes nothing) and seeing plain ``torch.Tensor``
(`torch.array_object.native_arrays`), run interleaved in the same process; the table shows
medians and the ratio array object / plain tensors (target: geometric mean <= 1.02 at 1K
elements). Under ``torch.compile`` the wrapper exists only while Dynamo traces
(tests/test_torch_array.py asserts the graphs are the same).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

import crossgrad as cg
from crossgrad.backends.torch import array_object as torch_array_object
from crossgrad.benchmarks import array_object_overhead, handwritten, overhead, timing, torch_overhead
from crossgrad.cli import usage

TARGET_RATIO = 1.02


def _rows(name: str, elements: int, budget_s: float) -> tuple:
  baseline = handwritten.BASELINES[name]
  rng = np.random.default_rng(0)
  op = cg.get(name)
  fn = cg.torch.get(op, **baseline.params)
  inputs = [torch.tensor(x, requires_grad=i in op.diff_argnums)
            for i, x in enumerate(baseline.inputs(elements, rng))]
  outputs = overhead.as_tuple(fn(*inputs))
  weights = [torch.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outputs]
  step = torch_overhead.train_step(fn, False, op.diff_argnums)

  def ours():
    with array_object_overhead.as_is():
      return step(inputs, weights)

  def native():
    with torch_array_object.native_arrays():
      return step(inputs, weights)

  medians, repeats = timing.calibrated_medians(
      {"array object": ours, "plain tensors": native}, budget_s)
  ours, theirs = medians["array object"], medians["plain tensors"]
  return (name, int(inputs[0].numel()), round(ours * 1e6, 1), round(theirs * 1e6, 1),
          round(ours / theirs, 3), repeats)


def run(sizes: Sequence[int] = (1_000,), ops: Sequence[str] | None = None,
        budget_s: float = 2.0, json_path: str | None = None) -> dict:
  return array_object_overhead.run(_rows, "torch", TARGET_RATIO, sizes, ops, budget_s, json_path)


if __name__ == "__main__":
  array_object_overhead.define_flags("torch_array_overhead")
  usage.run(array_object_overhead.main_running(_rows, "torch", TARGET_RATIO))
