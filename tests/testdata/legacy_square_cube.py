"""Seed 001's py_func square and cube, as written there (fixture for the tests)."""

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.python.framework import ops


def py_func(func, inp, Tout, stateful=True, name=None, grad=None):
  rnd_name = 'PyFuncGrad' + str(np.random.randint(0, 1E+8))
  tf.RegisterGradient(rnd_name)(grad)
  g = tf.get_default_graph()
  with g.gradient_override_map({"PyFunc": rnd_name}):
    return tf.py_func(func, inp, Tout, stateful=stateful, name=name)


def _MySquareGrad(op, grad):
  x = op.inputs[0]
  return grad * 2 * x


def mysquare(x, name=None):
  with ops.name_scope(name, "Mysquare", [x]) as name:
    sqr_x = py_func(np.square, [x], [tf.float32], name=name, grad=_MySquareGrad)
    return sqr_x[0]


def _MyCubeGrad(op, grad):
  name = "MyCubeGrad"
  x = op.inputs[0]
  cube_x_grad = py_func(lambda a: np.power(a, 2) * 3, [x], [tf.float32], name=name)
  return cube_x_grad[0]  # As in the seed: ignores `grad` (right only for ones).


def my_cube(x, name=None):
  with ops.name_scope(name, "MyCube", [x]) as name:
    cube_x = py_func(lambda a: np.power(a, 3), [x], [tf.float32], name=name,
                     grad=_MyCubeGrad)
    return cube_x[0]
