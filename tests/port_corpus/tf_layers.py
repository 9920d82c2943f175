"""`tf.custom_gradient` definitions in the styles TF2 and Keras models use (a porter test corpus)."""

import numpy as np
import tensorflow as tf


@tf.custom_gradient
def log1pexp(x):
  e = tf.exp(x)

  def grad(upstream):
    return upstream * (1 - 1 / (1 + e))

  return tf.math.log(1 + e), grad


@tf.custom_gradient
def bilinear(x, y):
  """x * y with both cotangents: several inputs."""
  def grad(dy):
    return dy * y, dy * x

  return x * y, grad


@tf.custom_gradient
def reverse_gradient(x, scale=1.0):
  """Identity forward, the cotangent negated and scaled (gradient reversal, a surrogate)."""
  def grad(dy):
    return tf.negative(dy) * tf.cast(scale, dy.dtype), None

  return tf.identity(x), grad


@tf.custom_gradient
def square_and_sine(x):
  """Two outputs; the grad takes them as *grad_ys."""
  y1 = tf.square(x)
  y2 = tf.math.sin(x)

  def grad(*grad_ys):
    g1, g2 = grad_ys
    return g1 * 2.0 * x + g2 * tf.math.cos(x)

  return (y1, y2), grad


@tf.custom_gradient
def swish(x):
  """x * sigmoid(x); the backward drops the product rule's second term (a real bug)."""
  s = tf.nn.sigmoid(x)

  def grad(upstream):
    return upstream * s

  return x * s, grad


@tf.custom_gradient
def softsign_sum(x, axis=-1):
  """sum(x / (1 + |x|)) along axis: a Python int argument."""
  d = 1.0 + tf.abs(x)

  def grad(upstream):
    return tf.expand_dims(upstream, axis) / tf.square(d), None

  return tf.reduce_sum(x / d, axis=axis), grad


_scale = tf.Variable(2.0)


@tf.custom_gradient
def scaled_by_variable(x):
  """x * a tf.Variable read inside: its gradient goes through variables=."""
  def grad(upstream, variables=None):
    return upstream * _scale, [tf.reduce_sum(upstream * x)]

  return x * _scale, grad


@tf.custom_gradient
def dropout_like(x):
  """Random masking inside the forward: randomness the op language cannot carry."""
  keep = tf.cast(tf.random.uniform(tf.shape(x)) > 0.5, x.dtype)

  def grad(upstream):
    return upstream * keep

  return x * keep, grad


def _floats(rng, *shape):
  return rng.standard_normal(shape).astype(np.float32)


SAMPLES = {
    "log1pexp": lambda rng: (_floats(rng, 3, 4),),
    "bilinear": lambda rng: (_floats(rng, 2, 3), _floats(rng, 2, 3)),
    "reverse_gradient": lambda rng: (_floats(rng, 5), 0.5),
    "square_and_sine": lambda rng: (_floats(rng, 4),),
    "swish": lambda rng: (_floats(rng, 3, 2),),
    "softsign_sum": lambda rng: (_floats(rng, 3, 4), 1),
    "scaled_by_variable": lambda rng: (_floats(rng, 3),),
    "dropout_like": lambda rng: (_floats(rng, 3),),
}
GRADIENTS = {
    "log1pexp": "exact", "bilinear": "exact", "reverse_gradient": "surrogate",
    "square_and_sine": "exact", "swish": "exact", "softsign_sum": "exact",
}
