"""Legacy pairs as projects write them, for port_check (fixture): a NumPy function with
defaults as the forward, helpers nested in a builder, stochastic forwards and gradients."""

import numpy as np
import tensorflow.compat.v1 as tf

round_forward = np.round  # np.round(a, decimals=0, out=None): one input.


def identity_grad(op, grad):
  return grad


def stochastic_round(x):
  """DoReFa-style stochastic rounding: a fresh NumPy draw on every call."""
  return np.floor(x + np.random.uniform(size=np.shape(x))).astype(x.dtype)


def noisy_identity_grad(op, grad):
  return grad * tf.random.uniform(tf.shape(grad), 0.9, 1.1, dtype=grad.dtype)


def positive_sample(rng):
  return (rng.uniform(0.5, 2.0, (3, 4)),)


def build_log_layer():
  def log_forward(x):
    return np.log(x)

  def log_grad(op, grad):
    return grad / op.inputs[0]

  return log_forward, log_grad


def build_scaled_layer(scale):
  def scaled_grad(op, grad):
    return grad * scale

  return scaled_grad
