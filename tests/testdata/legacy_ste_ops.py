"""Straight-through tricks over the other overridable op types, TF1 style (fixture):
gradients registered under fixed names and applied with gradient_override_map."""

import tensorflow.compat.v1 as tf


@tf.RegisterGradient("LegacyPassFirst")
def _pass_first(op, grad):
  """A two-input op's whole gradient goes to its first input."""
  return grad, tf.zeros_like(op.inputs[1])


@tf.RegisterGradient("LegacyHalf")
def _half(op, grad):
  return 0.5 * grad


def _override(mapping):
  return tf.get_default_graph().gradient_override_map(mapping)


def floor_ste(x):
  with _override({"Floor": "Identity"}):
    return tf.floor(x)


def ceil_ste(x):
  with _override({"Ceil": "Identity"}):
    return tf.ceil(x)


def half_precision_ste(x):
  """Rounds to float16 and back; each cast passes half the gradient."""
  with _override({"Cast": "LegacyHalf"}):
    return tf.cast(tf.cast(x, tf.float16), x.dtype)


def max_to_first(x, y):
  with _override({"Maximum": "LegacyPassFirst"}):
    return tf.maximum(x, y)


def min_to_first(x, y):
  with _override({"Minimum": "LegacyPassFirst"}):
    return tf.minimum(x, y)


def leaky_stop_gradient(x):
  with _override({"StopGradient": "LegacyHalf"}):
    return tf.stop_gradient(x)


def half_relu(x):
  with _override({"Relu": "LegacyHalf"}):
    return tf.nn.relu(x)
