"""Guided backpropagation on a trained graph, as saliency code did it in TF1 (fixture): a
"GuidedRelu" gradient applied with gradient_override_map while importing a frozen GraphDef,
then tf.gradients of one logit with respect to the input."""

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.python.ops import gen_nn_ops


@tf.RegisterGradient("GuidedRelu")
def _guided_relu_grad(op, grad):
  return tf.where(0. < grad, gen_nn_ops.relu_grad(grad, op.outputs[0]), tf.zeros_like(grad))


def trained_graph_def(seed=0):
  """A 'trained' two-layer net frozen to constants: input 'x:0' (?, 4), output 'logits:0'."""
  rng = np.random.RandomState(seed)
  graph = tf.Graph()
  with graph.as_default():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w1 = tf.constant(rng.randn(4, 8).astype(np.float32))
    w2 = tf.constant(rng.randn(8, 3).astype(np.float32))
    hidden = tf.nn.relu(tf.matmul(x, w1), name="hidden")
    tf.identity(tf.matmul(hidden, w2), name="logits")
  return graph.as_graph_def()


def saliency(graph_def, images, label):
  graph = tf.Graph()
  with graph.as_default():
    x = tf.placeholder(tf.float32, [None, 4])
    with graph.gradient_override_map({"Relu": "GuidedRelu"}):
      logits, = tf.import_graph_def(graph_def, input_map={"x:0": x},
                                    return_elements=["logits:0"])
    grad = tf.gradients(logits[:, label], x)[0]
    with tf.Session(graph=graph) as sess:
      return sess.run(grad, {x: images})
