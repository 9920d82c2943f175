"""Defun with python_grad_func, TF1 style (fixture): BinaryNet's sign with the hard-tanh
straight-through gradient, and a two-input op."""

import tensorflow.compat.v1 as tf
from tensorflow.python.framework import function


def _hard_tanh_grad(op, grad):
  x = op.inputs[0]
  return grad * tf.cast(tf.abs(x) <= 1.0, grad.dtype)


@function.Defun(tf.float32, python_grad_func=_hard_tanh_grad)
def binarize_ste(x):
  return tf.sign(x)


def _scaled_square_grad(op, grad):
  a, s = op.inputs[0], op.inputs[1]
  return grad * 2.0 * a * s, grad * a * a


@function.Defun(tf.float32, tf.float32, python_grad_func=_scaled_square_grad)
def scaled_square(a, s):
  return tf.square(a) * s
