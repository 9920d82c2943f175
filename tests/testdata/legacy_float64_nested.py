"""A float64 py_func whose gradient calls another py_func (fixture), like seed 001's cube
but in double precision and multiplying by the upstream gradient."""

import numpy as np
import tensorflow.compat.v1 as tf


def py_func(func, inp, Tout, stateful=True, name=None, grad=None):
  rnd_name = 'PyFuncGrad' + str(np.random.randint(0, 1E+8))
  tf.RegisterGradient(rnd_name)(grad)
  g = tf.get_default_graph()
  with g.gradient_override_map({"PyFunc": rnd_name}):
    return tf.py_func(func, inp, Tout, stateful=stateful, name=name)


def _softplus(x):
  return np.log1p(np.exp(x))


def _sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def _softplus_grad(op, grad):
  x = op.inputs[0]
  s = py_func(_sigmoid, [x], [tf.float64], name="softplus_grad")[0]
  return grad * s


def softplus(x, name=None):
  return py_func(_softplus, [x], [tf.float64], name=name, grad=_softplus_grad)[0]
