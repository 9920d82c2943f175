r"""A Keras model with crossgrad ops, saved as a SavedModel, reloaded in a fresh process
and fine-tuned with its custom gradients.

The model quantises its first kernel to 4-bit levels with crossgrad's ``ste_quantize``
(clipped straight-through gradient: the forward rounds, whose own derivative is zero) and
applies crossgrad's ``leaky_relu``. Phase ``train`` fits it to a regression, then writes
a SavedModel with `keras.export.ExportArchive` and
``tf.saved_model.SaveOptions(experimental_custom_gradients=True)``, together with the
gradient of the loss on a probe batch. Phase ``finetune``, in a fresh Python process,
loads the SavedModel (no crossgrad op is rebuilt: only TensorFlow runs), checks that its
gradient on the probe batch is the saved one (the straight-through gradient reaches the
quantised kernel) and fine-tunes the loaded variables on shifted data.

  python -m crossgrad.examples.keras_saved_model --steps=300 --finetune_steps=200
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from absl import flags
import numpy as np

from crossgrad.cli import usage

FLAGS = flags.FLAGS


def define_flags():
  """The binary's flags (defined when run, so that importing this module defines none)."""
  flags.DEFINE_integer("steps", 300, "Training steps before saving.")
  flags.DEFINE_integer("finetune_steps", 200, "Fine-tuning steps after reloading.")
  flags.DEFINE_enum("phase", "both", ["both", "train", "finetune"],
                    "both: train and save here, then fine-tune in a fresh process.")
  flags.DEFINE_string("path", None, "SavedModel folder (default: a temporary one).")
  flags.DEFINE_integer("seed", 0, "Seed for data and initial weights.")

N, N_IN, HIDDEN = 256, 4, 16
LEARNING_RATE = 0.05
QUANTIZE = {"bits": 4, "scale": 0.125, "clip": True}  # Levels -1.0 ... 0.875.


def data(seed: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
  """A smooth regression ``y = sin(x . a) + 0.5 (x . b)^2 / N_IN`` (``shift`` moves it)."""
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((N, N_IN)).astype(np.float32)
  a, b = (np.random.default_rng(100).standard_normal((2, N_IN)) / np.sqrt(N_IN))
  y = np.sin(x @ a + shift) + 0.5 * (x @ b) ** 2
  return x, y[:, None].astype(np.float32)


def build_model(seed: int):
  import keras  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top

  class QuantizedDense(keras.layers.Layer):
    """Dense layer whose kernel is rounded to 4-bit levels (straight-through gradient),
    followed by crossgrad's leaky ReLU."""

    def __init__(self, units, **kwargs):
      super().__init__(**kwargs)
      self.units = units
      self.quantize = cg.tensorflow.get("ste_quantize", **QUANTIZE)
      self.activation = cg.tensorflow.get("leaky_relu")

    def build(self, input_shape):
      self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel",
                                    initializer=keras.initializers.RandomUniform(-0.8, 0.8))
      self.bias = self.add_weight(shape=(self.units,), initializer="zeros", name="bias")

    def call(self, x):
      return self.activation(x @ self.quantize(self.kernel) + self.bias)

  keras.utils.set_random_seed(seed)
  return keras.Sequential([keras.Input((N_IN,)), QuantizedDense(HIDDEN, name="quantized"),
                           keras.layers.Dense(1, name="readout")])


def _loss_and_grads(forward, variables, x, y):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.square(forward(tf.constant(x)) - y))
  return loss, tape.gradient(loss, variables)


def _sgd(forward, variables, x, y, steps: int) -> list[float]:
  losses = []
  for _ in range(steps):
    loss, grads = _loss_and_grads(forward, variables, x, y)
    for v, g in zip(variables, grads):
      v.assign_sub(LEARNING_RATE * g)
    losses.append(float(loss))
  return losses


def train(path: str, steps: int, seed: int) -> dict:
  """Trains, saves the SavedModel and, next to it, the probe batch and its gradient."""
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  model = build_model(seed)
  x, y = data(seed)
  losses = _sgd(model, model.trainable_variables, x, y, steps)
  archive = keras.export.ExportArchive()
  archive.track(model)
  archive.add_endpoint("serve", model.call, input_signature=[
      tf.TensorSpec((None, N_IN), tf.float32)])
  archive.write_out(path, options=tf.saved_model.SaveOptions(
      experimental_custom_gradients=True), verbose=False)
  probe_x, probe_y = data(seed + 1)
  _, grads = _loss_and_grads(model, model.trainable_variables, probe_x, probe_y)
  kernel = model.get_layer("quantized").kernel
  np.savez(os.path.join(path, "probe.npz"), x=probe_x, y=probe_y,
           kernel=next(i for i, v in enumerate(model.trainable_variables) if v is kernel),
           **{f"grad_{i}": g.numpy() for i, g in enumerate(grads)})
  return {"train_losses": losses}


def finetune(path: str, steps: int, seed: int) -> dict:
  """Loads the SavedModel (TensorFlow only), compares its probe gradient with the saved
  one, and fine-tunes its variables on shifted data."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  loaded = tf.saved_model.load(path)
  variables = list(loaded.trainable_variables)
  probe = np.load(os.path.join(path, "probe.npz"))
  _, grads = _loss_and_grads(loaded.serve, variables, probe["x"], probe["y"])
  saved = [probe[f"grad_{i}"] for i in range(len(grads))]
  gradient_error = max(float(np.max(np.abs(g.numpy() - want)) / np.max(np.abs(want)))
                       for g, want in zip(grads, saved))
  kernel = grads[int(probe["kernel"])]
  x, y = data(seed + 2, shift=0.5)
  losses = _sgd(loaded.serve, variables, x, y, steps)
  return {"gradient_error": gradient_error,
          "kernel_gradient_norm": float(np.linalg.norm(kernel.numpy())),
          "finetune_losses": losses}


def run(steps: int = 300, finetune_steps: int = 200, seed: int = 0,
        path: str | None = None) -> dict:
  """Trains and saves here, then fine-tunes in a fresh process; both phases' results."""
  with tempfile.TemporaryDirectory() as tmp:
    path = path or os.path.join(tmp, "model")
    results = train(path, steps, seed)
    done = subprocess.run(
        [sys.executable, "-m", "crossgrad.examples.keras_saved_model", "--phase=finetune",
         f"--path={path}", f"--finetune_steps={finetune_steps}", f"--seed={seed}"],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
      raise RuntimeError(f"fine-tuning process failed:\n{done.stderr[-3000:]}")
    results.update(json.loads(done.stdout.strip().splitlines()[-1]))
  return results


def main(argv):
  del argv
  if FLAGS.phase == "finetune":
    print(json.dumps(finetune(FLAGS.path, FLAGS.finetune_steps, FLAGS.seed)))
    return
  if FLAGS.phase == "train":
    print(json.dumps(train(FLAGS.path, FLAGS.steps, FLAGS.seed)))
    return
  results = run(FLAGS.steps, FLAGS.finetune_steps, FLAGS.seed, FLAGS.path)
  train_losses, tune_losses = results["train_losses"], results["finetune_losses"]
  print(f"training: loss {train_losses[0]:.4f} -> {train_losses[-1]:.4f} "
        f"({len(train_losses)} steps), SavedModel written")
  print(f"fresh process: probe gradient of the loaded model vs the saved one: max relative "
        f"error {results['gradient_error']:.1e}; straight-through kernel gradient norm "
        f"{results['kernel_gradient_norm']:.3f} (the forward's own derivative would be 0)")
  print(f"fine-tuning on shifted data: loss {tune_losses[0]:.4f} -> {tune_losses[-1]:.4f} "
        f"({len(tune_losses)} steps)")


if __name__ == "__main__":
  define_flags()
  usage.run(main)
