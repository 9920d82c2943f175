"""A Keras training step with a crossgrad op against a hand-written `keras.ops.custom_gradient`.

The same model, ``Dense(width) -> quantize -> Dense(10)``, where ``quantize`` is round to a
grid of 0.25 with a straight-through gradient: once `cg.keras.OpLayer("ste_quantize")`,
once a layer calling a `keras.ops.custom_gradient` function (Keras' per-backend ``grad``
signature, as its docs write it). Each step is ``model.train_on_batch`` (``jit_compile=True``
on TF and JAX; torch runs Keras' eager path). Keras fixes its backend per process, so each
backend runs in a subprocess of its own (``--worker``); runs within one are interleaved and
each figure is a median over repeats; the ratio is crossgrad / hand-written.

  python -m crossgrad.benchmarks.keras_step [--quick] [--backends=tensorflow,jax,torch]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from absl import flags
import numpy as np

from crossgrad.benchmarks import timing
from crossgrad.cli import usage

FLAGS = flags.FLAGS
SCALE = 0.25


def settings(quick: bool) -> dict:
  return {"batch": 64 if quick else 512, "width": 64 if quick else 1024,
          "budget_s": 2.0 if quick else 20.0}


def _handwritten_quantize():
  import keras  # pylint: disable=g-import-not-at-top

  @keras.ops.custom_gradient
  def quantize(x):
    def grad(*args, upstream=None):
      if upstream is None:
        (upstream,) = args
      return upstream
    return keras.ops.round(x * (1.0 / SCALE)) * SCALE, grad

  class Quantize(keras.layers.Layer):
    def call(self, x):
      return quantize(x)

  return Quantize()


def _model(quantize, width: int):
  import keras  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(0)
  inputs = keras.Input((width,))
  model = keras.Model(inputs, keras.layers.Dense(10)(quantize(keras.layers.Dense(width)(inputs))))
  model.compile(optimizer="sgd", loss="mse", jit_compile=keras.backend.backend() != "torch")
  return model


def worker(batch: int, width: int, budget_s: float) -> dict:
  """This process' backend: median step seconds of both models and their ratio."""
  import keras  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  x = rng.standard_normal((batch, width)).astype(np.float32)
  y = rng.standard_normal((batch, 10)).astype(np.float32)
  models = {"crossgrad": _model(cg.keras.OpLayer("ste_quantize", scale=SCALE), width),
            "handwritten": _model(_handwritten_quantize(), width)}
  losses = {k: float(m.train_on_batch(x, y)) for k, m in models.items()}
  np.testing.assert_allclose(losses["crossgrad"], losses["handwritten"], rtol=1e-4)
  medians, repeats = timing.calibrated_medians(
      {k: (lambda m=m: m.train_on_batch(x, y)) for k, m in models.items()}, budget_s)
  return {"backend": keras.backend.backend(), "batch": batch, "width": width,
          "repeats": repeats, "crossgrad_s": medians["crossgrad"],
          "handwritten_s": medians["handwritten"],
          "ratio": medians["crossgrad"] / medians["handwritten"]}


def run(batch: int, width: int, budget_s: float,
        backends: tuple[str, ...] = ("tensorflow", "jax", "torch"),
        json_path: str | None = None) -> dict:
  rows = []
  for backend in backends:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, "-m", "crossgrad.benchmarks.keras_step", "--worker",
         f"--batch={batch}", f"--width={width}", f"--budget_s={budget_s}"],
        env=env, capture_output=True, text=True, check=True, timeout=1800)
    rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
  timing.emit("Keras train step: crossgrad op / hand-written keras.ops.custom_gradient",
              ("backend", "batch", "width", "crossgrad_s", "handwritten_s", "ratio"),
              [tuple(r[k] for k in ("backend", "batch", "width", "crossgrad_s", "handwritten_s",
                                    "ratio")) for r in rows], json_path)
  return {"rows": rows}


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("keras_step")
  flags.DEFINE_bool("worker", False, "Time this process' Keras backend; print one JSON line.")
  flags.DEFINE_integer("batch", None, "Batch rows (default: by --quick).")
  flags.DEFINE_integer("width", None, "Hidden width (default: by --quick).")
  flags.DEFINE_float("budget_s", None, "Timing budget per backend (default: by --quick).")
  flags.DEFINE_list("backends", ["tensorflow", "jax", "torch"], "Keras backends to time.")


def main(argv):
  del argv  # Unused.
  chosen = settings(FLAGS.quick)
  for k in chosen:
    if getattr(FLAGS, k) is not None:
      chosen[k] = getattr(FLAGS, k)
  if FLAGS.worker:
    print(json.dumps(worker(**chosen)))
    return
  run(**chosen, backends=tuple(FLAGS.backends), json_path=FLAGS.json)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
