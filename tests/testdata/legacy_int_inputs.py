"""A py_func with an int32 input (fixture): an embedding lookup in NumPy whose gradient
scatters back with TF and gives the ids none."""

import numpy as np
import tensorflow.compat.v1 as tf


def py_func(func, inp, Tout, stateful=True, name=None, grad=None):
  rnd_name = 'PyFuncGrad' + str(np.random.randint(0, 1E+8))
  tf.RegisterGradient(rnd_name)(grad)
  g = tf.get_default_graph()
  with g.gradient_override_map({"PyFunc": rnd_name}):
    return tf.py_func(func, inp, Tout, stateful=stateful, name=name)


def lookup(params, ids):
  return params[ids]


def lookup_grad(op, grad):
  params, ids = op.inputs[0], op.inputs[1]
  return tf.math.unsorted_segment_sum(grad, ids, tf.shape(params)[0]), None


def embed(params, ids, name=None):
  return py_func(lookup, [params, ids], [tf.float32], name=name, grad=lookup_grad)[0]
