"""Other spellings of a custom-gradient py_func (fixture for the scanner)."""

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import function


@tf.RegisterGradient("MyClipGrad")
def _clip_grad(op, grad):
  return grad


@tf.custom_gradient
def numpy_square(x):
  y = tf.numpy_function(np.square, [x], tf.float32)

  def grad(upstream):
    return upstream * 2 * x

  return y, grad


def plain(x):
  return tf.numpy_function(np.sqrt, [x], tf.float32)  # No custom gradient: not listed.


def squared_back_prop(op, grad):
  return tf.multiply(op.inputs[0] * 2.0, grad)


@function.Defun(tf.float32, python_grad_func=squared_back_prop)
def squared_forward_prop(a):
  return tf.square(a)
