r"""Eager cost of the standard's array object in TensorFlow op bodies.

  python -m crossgrad.benchmarks.tensorflow_array_overhead [--sizes=1000] [--ops=leaky_relu]

For every registry op with a hand-written baseline (its inputs): one eager train step, the
gradient of ``sum(op(inputs) * w)``, with the op's forward and backward seeing
`tensorflow_array.Array` (today's crossgrad) and seeing plain ``tf.Tensor``
(`tensorflow_array.native_arrays`), run interleaved in the same process; the table shows
medians and the ratio array object / plain tensors (target: <= 1.10 at 1K elements). Under
``tf.function`` and XLA the wrapper exists only while tracing (tests/test_tensorflow_array.py
asserts the graphs and optimised HLO are the same).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

import crossgrad as cg
from crossgrad.backends.tensorflow import array_object as tensorflow_array
from crossgrad.benchmarks import array_object_overhead, handwritten, overhead, timing
from crossgrad.cli import usage


def _rows(name: str, elements: int, budget_s: float) -> tuple:
  baseline = handwritten.BASELINES[name]
  rng = np.random.default_rng(0)
  op = cg.get(name)
  inputs = [tf.constant(x) for x in baseline.inputs(elements, rng)]
  outputs = overhead.as_tuple(cg.tensorflow.get(op, **baseline.params)(*inputs))
  weights = [tf.constant(rng.standard_normal(o.shape).astype(o.dtype.as_numpy_dtype))
             for o in outputs]
  step = overhead.tf_step(cg.tensorflow.get(op, **baseline.params), op.diff_argnums,
                          eager=True)

  def ours():
    with array_object_overhead.as_is():
      return step(inputs, weights)

  def native():
    with tensorflow_array.native_arrays():
      return step(inputs, weights)

  medians, repeats = timing.calibrated_medians(
      {"array object": ours, "plain tensors": native}, budget_s)
  ours, theirs = medians["array object"], medians["plain tensors"]
  return (name, int(inputs[0].shape.num_elements()), round(ours * 1e6, 1),
          round(theirs * 1e6, 1), round(ours / theirs, 3), repeats)


def run(sizes: Sequence[int] = (1_000,), ops: Sequence[str] | None = None,
        budget_s: float = 2.0, json_path: str | None = None) -> dict:
  return array_object_overhead.run(_rows, "TensorFlow", 1.10, sizes, ops, budget_s, json_path)


if __name__ == "__main__":
  array_object_overhead.define_flags("tensorflow_array_overhead")
  usage.run(array_object_overhead.main_running(_rows, "TensorFlow", 1.10))
