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


class FlipGradientBuilder(object):
  """DANN's gradient reversal: a new registered name per call, from a counter."""

  def __init__(self):
    self.num_calls = 0

  def __call__(self, x, l=1.0):
    grad_name = "UpgradeFlip%d" % self.num_calls

    @tf.RegisterGradient(grad_name)
    def _flip_gradients(op, grad):
      return [tf.negative(grad) * l]

    g = tf.get_default_graph()
    with g.gradient_override_map({"Identity": grad_name}):
      y = tf.identity(x)
    self.num_calls += 1
    return y


flip_gradient = FlipGradientBuilder()


@tf.RegisterGradient("UpgradeGuidedRelu")
def _guided_relu_grad(op, grad):
  return tf.where(0. < grad, grad * tf.cast(op.outputs[0] > 0, grad.dtype), tf.zeros_like(grad))


def saliency(w1, w2, images, label):
  """Guided backprop on a frozen two-layer net, imported under the override."""
  frozen = tf.Graph()
  with frozen.as_default():
    x = tf.placeholder(tf.float32, [None, w1.shape[0]], name="x")
    tf.identity(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2), name="logits")
  graph = tf.Graph()
  with graph.as_default():
    x = tf.placeholder(tf.float32, [None, w1.shape[0]])
    with graph.gradient_override_map({"Relu": "UpgradeGuidedRelu"}):
      logits, = tf.import_graph_def(frozen.as_graph_def(), input_map={"x:0": x},
                                    return_elements=["logits:0"])
    grad = tf.gradients(logits[:, label], x)[0]
    with tf.Session(graph=graph) as session:
      return session.run(grad, {x: images})
