"""TensorFlow export round trips: a SavedModel saved and loaded back. (The ``jax2tf`` round
trip joins the TensorFlow backend from the checker, `crossgrad.checker.round_trips`.)"""

from __future__ import annotations

import tempfile
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

_LOADED: dict[tuple, Callable[..., Any]] = {}


def saved_model_round_trip(fn: Callable[..., Any],
                           inputs: Sequence[np.ndarray]) -> Callable[..., Any]:
  """``fn`` as a `tf.function` for the shapes and dtypes of ``inputs``, saved with its custom
  gradients (`tf.saved_model.save`) and loaded back (`tf.saved_model.load`)."""
  specs = tuple(tf.TensorSpec(np.shape(x), tf.as_dtype(np.asarray(x).dtype)) for x in inputs)
  key = (fn, specs)
  if key not in _LOADED:
    module = tf.Module()
    module.f = tf.function(lambda *args: fn(*args), input_signature=specs, autograph=False)
    with tempfile.TemporaryDirectory() as path:
      tf.saved_model.save(module, path, options=tf.saved_model.SaveOptions(
          experimental_custom_gradients=True))
      _LOADED[key] = tf.saved_model.load(path).f
  return _LOADED[key]

