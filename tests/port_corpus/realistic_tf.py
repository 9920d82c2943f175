"""tf.custom_gradient definitions of the kinds TF2 and Keras models hold (a realistic
corpus for crossgrad-port: 8 definitions)."""

import math

import numpy as np
import tensorflow as tf


@tf.custom_gradient
def flip_gradient(x):
  """Gradient reversal layer: identity forward, negated upstream."""
  def grad(upstream):
    return -upstream

  return tf.identity(x), grad


@tf.custom_gradient
def stable_softplus(x):
  y = tf.maximum(x, 0.0) + tf.math.log1p(tf.exp(-tf.abs(x)))

  def grad(upstream):
    return upstream * tf.sigmoid(x)

  return y, grad


@tf.custom_gradient
def safe_norm(x, eps=1e-7):
  """Euclidean norm over the last axis, eps under the root; eps is a Python float."""
  norm = tf.sqrt(tf.reduce_sum(tf.square(x), axis=-1) + eps)

  def grad(upstream):
    return tf.expand_dims(upstream / norm, -1) * x, None

  return norm, grad


@tf.custom_gradient
def gelu_tanh(x):
  c = math.sqrt(2.0 / math.pi)
  inner = c * (x + 0.044715 * tf.pow(x, 3))
  t = tf.tanh(inner)

  def grad(dy):
    dinner = c * (1.0 + 3 * 0.044715 * tf.square(x))
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - tf.square(t)) * dinner)

  return 0.5 * x * (1.0 + t), grad


@tf.custom_gradient
def mean_and_variance(x):
  """Moments over the last axis: two outputs, the grad takes *grad_ys."""
  n = tf.cast(tf.shape(x)[-1], x.dtype)
  mean = tf.reduce_mean(x, axis=-1)
  centered = x - tf.expand_dims(mean, -1)
  var = tf.reduce_mean(tf.square(centered), axis=-1)

  def grad(*grad_ys):
    d_mean, d_var = grad_ys
    return (tf.expand_dims(d_mean, -1) / n
            + tf.expand_dims(d_var, -1) * 2.0 * centered / n)

  return (mean, var), grad


@tf.custom_gradient
def log_cosh_loss(y_pred, y_true):
  """log(cosh(d)), d = y_pred - y_true, written to stay finite for large |d|."""
  d = y_pred - y_true
  loss = d + tf.math.softplus(-2.0 * d) - math.log(2.0)

  def grad(upstream):
    t = tf.tanh(d)
    return upstream * t, -upstream * t

  return loss, grad


@tf.custom_gradient
def round_ste(x):
  """Round in the forward, identity gradient (a straight-through estimator)."""
  return tf.round(x), lambda dy: dy


_kernel = tf.Variable(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3))


@tf.custom_gradient
def dense_relu(x):
  """A Keras-style dense layer whose kernel is a tf.Variable: gradients via variables=."""
  z = tf.matmul(x, _kernel)
  mask = tf.cast(z > 0, z.dtype)

  def grad(upstream, variables=None):
    dz = upstream * mask
    return tf.matmul(dz, _kernel, transpose_b=True), [tf.matmul(x, dz, transpose_a=True)]

  return tf.nn.relu(z), grad


def _floats(rng, *shape):
  return rng.standard_normal(shape).astype(np.float32)


SAMPLES = {
    "flip_gradient": lambda rng: (_floats(rng, 3, 4),),
    "stable_softplus": lambda rng: (_floats(rng, 5, 2) * 4,),
    "safe_norm": lambda rng: (_floats(rng, 4, 3), 1e-7),
    "gelu_tanh": lambda rng: (_floats(rng, 3, 5),),
    "mean_and_variance": lambda rng: (_floats(rng, 3, 6),),
    "log_cosh_loss": lambda rng: (_floats(rng, 4, 2), _floats(rng, 4, 2)),
    "round_ste": lambda rng: (_floats(rng, 6) * 3,),
    "dense_relu": lambda rng: (_floats(rng, 2, 4),),
}
GRADIENTS = {
    "flip_gradient": "surrogate", "stable_softplus": "exact", "safe_norm": "exact",
    "gelu_tanh": "exact", "mean_and_variance": "exact", "log_cosh_loss": "exact",
    "round_ste": "surrogate", "dense_relu": "exact",
}
