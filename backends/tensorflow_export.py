"""TensorFlow export round trips: a SavedModel saved and loaded back, and the JAX op
converted to TensorFlow with `jax2tf` (its gradient attached with `tf.custom_gradient`)."""

from __future__ import annotations

import contextlib
import tempfile
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from crossgrad.registry.opdef import OpDef

NO_FORWARD_MODE = {
    "jax2tf": "jax2tf.convert(with_gradient=True) attaches the JAX op's VJP with "
              "tf.custom_gradient; TF's forward mode differentiates the converted forward",
}
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


def jax2tf_op(op: OpDef, params: dict) -> Callable[..., Any]:
  """The JAX backend's op converted to TensorFlow, gradient included."""
  from jax.experimental import jax2tf  # pylint: disable=g-import-not-at-top
  from crossgrad.backends import jax as jax_backend  # pylint: disable=g-import-not-at-top
  return jax2tf.convert(jax_backend.get(op, **params), with_gradient=True)


def jax_precision(arrays: Sequence[Any]) -> contextlib.AbstractContextManager:
  """JAX's 64-bit scope where the arrays need it (jax2tf converts at call time)."""
  from crossgrad.backends import jax as jax_backend  # pylint: disable=g-import-not-at-top
  return jax_backend.precision_scope(arrays)
