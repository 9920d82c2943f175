"""The random-name py_func helper in the variants projects wrote (fixture for the upgrade
tests): np.random, uuid and counter names, a graph argument, PyFuncStateless with
stateful=False, two outputs, and the idiom inline in a Keras layer's call."""

import uuid

import keras
import numpy as np
import tensorflow.compat.v1 as tf

_COUNT = [0]


def py_func(func, inp, Tout, graph, stateful=True, name=None, grad=None):
  # Need to generate a unique name to avoid duplicates
  # if you have more than one custom gradients:
  rnd_name = 'PyFuncGrad' + str(np.random.randint(0, 1E+8))
  tf.RegisterGradient(rnd_name)(grad)
  with graph.gradient_override_map({"PyFunc": rnd_name}):
    return tf.py_func(func, inp, Tout, stateful=stateful, name=name)


def uuid_py_func(func, inp, Tout, name=None, grad=None):
  grad_name = "PyFuncGrad" + uuid.uuid4().hex
  tf.RegisterGradient(grad_name)(grad)
  g = tf.get_default_graph()
  with g.gradient_override_map({"PyFunc": grad_name}):
    return tf.py_func(func, inp, Tout, name=name)


def counted_py_func(func, inp, Tout, grad):
  _COUNT[0] += 1
  name = "CountedGrad%d" % _COUNT[0]
  tf.RegisterGradient(name)(grad)
  with tf.get_default_graph().gradient_override_map({"PyFunc": name,
                                                     "PyFuncStateless": name}):
    return tf.py_func(func, inp, Tout, stateful=False)  # A PyFuncStateless op.


def _square_grad(op, grad):
  return grad * 2 * op.inputs[0]


def _tanh_grad(op, grad):
  return grad * (1 - op.outputs[0] ** 2)  # Reads the output, as TF1 gradients may.


def _sorted_pair(a, b):
  return np.minimum(a, b), np.maximum(a, b)


def _sorted_pair_grad(op, g_low, g_high):
  low = tf.cast(op.inputs[0] <= op.inputs[1], g_low.dtype)
  return g_low * low + g_high * (1 - low), g_low * (1 - low) + g_high * low


def square(x):
  return py_func(np.square, [x], [tf.float32], tf.get_default_graph(), grad=_square_grad)[0]


def tanh(x):
  return uuid_py_func(np.tanh, [x], [tf.float32], grad=_tanh_grad)[0]


def scaled_cube(x):
  return counted_py_func(lambda a: 0.5 * a ** 3, [x], [tf.float32],
                         lambda op, grad: 1.5 * grad * op.inputs[0] ** 2)[0]


def low_plus_twice_high(a, b):
  low, high = py_func(_sorted_pair, [a, b], [tf.float32, tf.float32],
                      tf.get_default_graph(), grad=_sorted_pair_grad)
  return low + 2 * high


class NumpyCube(keras.layers.Layer):
  """A Keras layer with the idiom inline, its gradient registered in call."""

  def call(self, x):
    grad_name = "NumpyCubeGrad" + str(np.random.randint(0, 1E+8))

    @tf.RegisterGradient(grad_name)
    def _cube_grad(op, grad):
      return grad * 3 * op.inputs[0] ** 2

    with tf.get_default_graph().gradient_override_map({"PyFunc": grad_name}):
      y = tf.py_func(lambda a: a ** 3, [x], tf.float32)
    y.set_shape(x.shape)
    return y
