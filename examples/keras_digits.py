r"""One Keras model with crossgrad layers on the digits data, under any Keras backend.

The model: ``Dense(32, relu) -> OpLayer("ste_quantize") -> PositiveDense(10)``: the
hidden features are rounded to a grid of 0.25 in the forward, and the first layer still
learns through the op's straight-through backward. Keras fixes its backend per process,
so run it once per backend; a model saved under one loads under another:

  KERAS_BACKEND=tensorflow python -m crossgrad.examples.keras_digits --save=/tmp/tf.keras
  KERAS_BACKEND=jax python -m crossgrad.examples.keras_digits --save=/tmp/jax.keras \
      --load=/tmp/tf.keras

``--load`` reloads a saved model (with the test predictions saved beside it) and prints the
largest difference between its predictions here and those of the backend that saved it.
"""

from __future__ import annotations

import json

from absl import flags
import numpy as np

from crossgrad.cli import usage

FLAGS = flags.FLAGS
NUM_TEST = 300


def digits(seed: int = 0):
  """(x_train, y_train, x_test, y_test): the 8x8 digits scaled to [0, 1], shuffled."""
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  data = datasets.load_digits()
  order = np.random.default_rng(seed).permutation(len(data.target))
  x = (data.data[order] / 16.0).astype(np.float32)
  y = data.target[order].astype(np.int32)
  return x[NUM_TEST:], y[NUM_TEST:], x[:NUM_TEST], y[:NUM_TEST]


def build(seed: int = 0):
  import keras  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  from crossgrad.layers import PositiveDense  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(seed)
  inputs = keras.Input((64,))
  hidden = keras.layers.Dense(32, activation="relu", name="hidden")(inputs)
  quantized = cg.keras.OpLayer("ste_quantize", scale=0.25, name="quantize")(hidden)
  model = keras.Model(inputs, PositiveDense(10, name="readout")(quantized))
  model.compile(optimizer=keras.optimizers.Adam(0.01),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"], jit_compile=keras.backend.backend() != "torch")
  return model


def train(epochs: int, seed: int = 0) -> dict:
  """Trains under this process' Keras backend; the model and its test results."""
  import keras  # pylint: disable=g-import-not-at-top
  x_train, y_train, x_test, y_test = digits(seed)
  model = build(seed)
  hidden_before = model.get_layer("hidden").get_weights()[0]
  model.fit(x_train, y_train, epochs=epochs, batch_size=64, verbose=0)
  hidden_moved = float(np.abs(model.get_layer("hidden").get_weights()[0] - hidden_before).max())
  predictions = model.predict(x_test, verbose=0)
  return {"backend": keras.backend.backend(), "model": model, "predictions": predictions,
          "accuracy": float(np.mean(np.argmax(predictions, 1) == y_test)),
          "hidden_moved": hidden_moved}


def reload(path: str, seed: int = 0) -> float:
  """Loads ``path`` here; the largest difference from the predictions saved with it."""
  import keras  # pylint: disable=g-import-not-at-top
  import crossgrad  # pylint: disable=g-import-not-at-top,unused-import  # Registers the layers.
  model = keras.models.load_model(path)
  return float(np.abs(model.predict(digits(seed)[2], verbose=0)
                      - np.load(path + ".npy")).max())


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_integer("epochs", 5, "Training epochs.")
  flags.DEFINE_integer("seed", 0, "Seed of the data order and the initial weights.")
  flags.DEFINE_string("save", None, "Save the trained model here (predictions beside it).")
  flags.DEFINE_string("load", None, "Reload a model saved (under any backend) with --save.")


def run(epochs: int, seed: int = 0, save: str | None = None, load: str | None = None) -> dict:
  """Trains (`train`), saves the model to ``save`` and reloads ``load`` (`reload`); the
  summary the binary prints."""
  result = train(epochs, seed)
  summary = {k: result[k] for k in ("backend", "accuracy", "hidden_moved")}
  if save:
    result["model"].save(save)
    np.save(save + ".npy", result["predictions"])
  if load:
    summary["reloaded_max_difference"] = reload(load, seed)
  return summary


def main(argv):
  del argv  # Unused.
  print(json.dumps(run(FLAGS.epochs, FLAGS.seed, FLAGS.save, FLAGS.load)))


if __name__ == "__main__":
  define_flags()
  usage.run(main)
