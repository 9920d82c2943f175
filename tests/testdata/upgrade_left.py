"""Overrides the upgrade cannot rewrite safely (fixture): each stays as written and is
listed in the report with the reason."""

import tensorflow.compat.v1 as tf
from tensorflow.python.framework import function


def computed(x, mapping):
  with tf.get_default_graph().gradient_override_map(mapping):  # Op types known at run time.
    return tf.sign(x)


def softplus_ste(x):
  with tf.get_default_graph().gradient_override_map({"Softplus": "Identity"}):
    return tf.nn.softplus(x)


def unregistered(x):
  with tf.get_default_graph().gradient_override_map({"PyFunc": "RegisteredElsewhere"}):
    return tf.py_func(abs, [x], tf.float32)


def _grad(op, grad):
  return grad


@function.Defun(tf.float32, python_grad_func=_grad, shape_func=lambda op: [op.inputs[0].shape])
def shaped(x):
  return x
