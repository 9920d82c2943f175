"""The random-name py_func helper under other names (fixture for the scanner): call sites
pass grad= to whatever the project called it."""

import numpy as np
import tensorflow as tf


def numpy_op(func, inp, Tout, grad=None, name=None):
  rnd_name = "NumpyOpGrad" + str(np.random.randint(0, 1E+8))
  tf.RegisterGradient(rnd_name)(grad)
  with tf.get_default_graph().gradient_override_map({"PyFunc": rnd_name}):
    return tf.py_func(func, inp, Tout, stateful=False, name=name)


def _roi_forward(x, rois):
  return x[rois]


def _roi_grad(op, grad):
  return grad, None


def roi_pool(x, rois):
  return numpy_op(_roi_forward, [x, rois], [tf.float32], grad=_roi_grad)


def clipped(x):
  return tf_pyfunc_with_grad(np.abs, [x], [tf.float32], grad=_roi_grad)  # noqa: F821
