"""The Keras digits example under each Keras backend: it trains (the first layer through the
straight-through op), and each backend reloads the model the previous one saved with equal
predictions; the test process (TensorFlow) reloads the last one. TensorFlow's run is this
process's own (Keras' backend here); JAX's and torch's run the binary in a subprocess each."""

import json

import keras

import crossgrad  # pylint: disable=unused-import  # Registers crossgrad's Keras layers.
import keras_backends
from crossgrad.examples import keras_digits


def test_trains_saves_and_reloads_across_backends(tmp_path):
  previous = None
  for backend in keras_backends.BACKENDS:
    path = str(tmp_path / f"{backend}.keras")
    if backend == keras.backend.backend():
      summary = keras_digits.run(3, save=path, load=previous)
    else:
      argv = ["-m", "crossgrad.examples.keras_digits", "--epochs=3", f"--save={path}"]
      out = keras_backends.run(backend, argv + ([f"--load={previous}"] if previous else []))
      summary = json.loads(out.strip().splitlines()[-1])
    assert summary["backend"] == backend
    assert summary["accuracy"] > 0.6, summary  # Chance is 0.1.
    assert summary["hidden_moved"] > 1e-2, summary  # Only the op's backward moves it.
    if previous:
      assert summary["reloaded_max_difference"] < 1e-4, summary
    previous = path
  assert keras.backend.backend() == "tensorflow"
  assert keras_digits.reload(previous) < 1e-4
