"""A TF1 program written like seeds 000 and 003: tf.add replaced by a py_func with an
overridden gradient, registered under a random name (fixture for the tests)."""

import numpy as np
import tensorflow.compat.v1 as tf


def py_func(func, inp, Tout, graph, stateful=True, name=None, grad=None):
  # Need to generate a unique name to avoid duplicates
  # if you have more than one custom gradients:
  rnd_name = 'PyFuncGrad' + str(np.random.randint(0, 1E+8))
  tf.RegisterGradient(rnd_name)(grad)
  with graph.gradient_override_map({"PyFunc": rnd_name}):
    return tf.py_func(func, inp, Tout, stateful=stateful, name=name)


def forward_func(c, k, d):
  e = np.add(c, k)
  return e.astype(np.float32)


def backprop_func(op, grad):
  c = op.inputs[0]
  k = op.inputs[1]
  d = op.inputs[2]
  e = tf.add(c, k)
  return (e + d) * grad, d * grad, e * grad


def add_grad(c, k, d, graph, name=None):
  with tf.name_scope(name, "AddGrad", [c, k, d]) as name:
    return py_func(forward_func, [c, k, d], [np.float32], graph, name=name,
                   grad=backprop_func)


def wrong_count_grad(op, grad):
  c = op.inputs[0]
  return grad * c, grad
