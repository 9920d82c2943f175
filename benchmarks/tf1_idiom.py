r"""crossgrad against the TF1 idiom: a NumPy forward in a Python callback with an
overridden gradient.

  python -m crossgrad.benchmarks.tf1_idiom [--quick] [--sizes=1000,1000000]

The "Override Tensorflow Backward-Propagation" post and sparse_cnn (docs/sources.md) build
custom-gradient ops as `tf.py_func` (NumPy forward) with a gradient registered through
`gradient_override_map`. In TF2 that is `tf.numpy_function`
inside `tf.custom_gradient`; the benchmark writes it for `leaky_relu` two ways: backward
in TF ops, and backward in another callback (sparse_cnn's "py_func op for the gradient
too"). Both run the train step of `overhead` in `tf.function` (callbacks cannot be
XLA-compiled); crossgrad's op runs in `tf.function` and under XLA. The figure is the
speedup, idiom time / crossgrad time, measured interleaved.
"""

from __future__ import annotations

from typing import Sequence

from absl import flags
import numpy as np
import tensorflow as tf

import crossgrad as cg
from crossgrad.benchmarks import overhead, timing
from crossgrad.cli import usage

FLAGS = flags.FLAGS

SIZES = (1_000, 1_000_000)
QUICK_SIZES = (1_000,)
ALPHA = 0.2


def _numpy_forward(x):
  return np.where(x > 0, x, ALPHA * x).astype(x.dtype)


def _numpy_backward(x, g):
  return np.where(x > 0, g, ALPHA * g).astype(g.dtype)


def py_func_leaky_relu(numpy_backward: bool):
  """leaky_relu in the TF1 idiom: forward (and optionally backward) as NumPy callbacks."""
  @tf.custom_gradient
  def op(x):
    y = tf.numpy_function(_numpy_forward, [x], x.dtype, stateful=False)
    y.set_shape(x.shape)

    def grad(g):
      if numpy_backward:
        dx = tf.numpy_function(_numpy_backward, [x, g], g.dtype, stateful=False)
        dx.set_shape(x.shape)
        return dx
      return tf.where(x > 0, g, ALPHA * g)

    return y, grad

  return op


def settings(quick: bool) -> dict:
  """run()'s arguments for a full or a quick run."""
  if quick:
    return {"sizes": QUICK_SIZES, "budget_s": 0.3, "min_repeats": 3}
  return {"sizes": SIZES, "budget_s": 3.0, "min_repeats": 9}


def run(sizes: Sequence[int] = SIZES, budget_s: float = 3.0, min_repeats: int = 9,
        json_path: str | None = None) -> dict:
  """Runs the benchmark, prints its table, writes JSON; returns the JSON payload."""
  crossgrad_op = cg.tensorflow.get("leaky_relu", alpha=ALPHA)
  idioms = {"numpy_function fwd, TF bwd": py_func_leaky_relu(False),
            "numpy_function fwd+bwd": py_func_leaky_relu(True)}
  rows = []
  for size in sizes:
    rng = np.random.default_rng(0)
    args = ([tf.constant(rng.standard_normal(size, dtype=np.float32))],
            [tf.constant(rng.standard_normal(size, dtype=np.float32))])
    steps = {name: overhead.tf_step(fn, [0], False) for name, fn in idioms.items()}
    steps["crossgrad tf.function"] = overhead.tf_step(crossgrad_op, [0], False)
    steps["crossgrad XLA"] = overhead.tf_step(crossgrad_op, [0], True)
    medians, repeats = timing.calibrated_medians(
        {name: (lambda s=step: s(*args)) for name, step in steps.items()}, budget_s,
        min_repeats=min_repeats)
    for idiom in idioms:
      for mode in ("crossgrad tf.function", "crossgrad XLA"):
        rows.append((size, idiom, mode, medians[idiom] * 1e3, medians[mode] * 1e3,
                     medians[idiom] / medians[mode], repeats))
  header = ("elements", "TF1 idiom", "crossgrad", "idiom ms", "crossgrad ms", "speedup",
            "repeats")
  timing.emit("leaky_relu train step: TF1 idiom (numpy_function + custom gradient) vs "
              "crossgrad (speedup = idiom / crossgrad)", header, rows, None)
  payload = {"title": "crossgrad vs the TF1 py_func idiom",
             "settings": {"sizes": list(sizes), "budget_s": budget_s,
                          "min_repeats": min_repeats},
             "target_speedup_at_1M": 4.0, "rows": [dict(zip(header, r)) for r in rows]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("tf1_idiom")
  timing.define_ints("sizes", "Element counts (default 1e3,1e6).")


def main(argv):
  del argv  # Unused.
  kwargs = settings(FLAGS.quick)
  if FLAGS.sizes:
    kwargs["sizes"] = FLAGS.sizes
  run(json_path=FLAGS.json, **kwargs)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
