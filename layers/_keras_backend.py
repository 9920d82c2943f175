"""The Keras layers run crossgrad's TensorFlow ops, so Keras must use its TF backend."""

import keras

from crossgrad.registry.errors import CrossgradError


def require_tensorflow(layer: str):
  if keras.backend.backend() != "tensorflow":
    raise CrossgradError(
        "crossgrad's Keras layers need Keras's TensorFlow backend", backend="tensorflow",
        argument=layer, expected="KERAS_BACKEND=tensorflow", actual=keras.backend.backend(),
        hint="For JAX use the crossgrad.layers.jax_* forms")
