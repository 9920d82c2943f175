"""A planted divergence (fixture): the grad behaves differently outside a TF1 graph."""

import numpy as np
import tensorflow as tf


def forward(x):
  return np.square(x)


def grad_graph_only(op, grad):
  scale = 2.0 if isinstance(op, tf.Operation) else 2.5  # Wrong wherever op is not real.
  return grad * scale * op.inputs[0]
