"""TF1 names under `import tensorflow as tf`, and gradients registered under fixed names
that read op.inputs / op.outputs (fixture for the upgrade tests): a py_func under
{"PyFunc": "UpgradeTanhGrad"}, an op-type override, and a Defun."""

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import function


@tf.RegisterGradient("UpgradeTanhGrad")
def _tanh_grad(op, grad):
  return grad * (1 - op.outputs[0] ** 2)


@tf.RegisterGradient("UpgradeHalfGrad")
def _half_grad(op, grad):
  return 0.5 * grad


def numpy_tanh(x):
  with tf.get_default_graph().gradient_override_map({"PyFunc": "UpgradeTanhGrad"}):
    return tf.py_func(np.tanh, [x], tf.float32)


def half_relu(x):
  g = tf.get_default_graph()
  with g.gradient_override_map({"Relu": "UpgradeHalfGrad"}):  # The ReLU passes half.
    return tf.nn.relu(x)


def _clip_grad(op, grad):
  return grad * tf.cast(tf.abs(op.inputs[0]) <= 1.0, grad.dtype) * tf.sign(op.outputs[0])


@function.Defun(tf.float32, python_grad_func=_clip_grad)
def abs_ste(x):
  return tf.abs(x)
