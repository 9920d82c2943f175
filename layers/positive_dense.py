"""`PositiveDense`: a Keras dense layer computing ``x @ relu(kernel)^T (+ bias)``."""

from __future__ import annotations

import math

import keras

from crossgrad.api import keras as cg_keras


@keras.saving.register_keras_serializable(package="crossgrad")
class PositiveDense(keras.layers.Layer):
  """Dense layer with non-negative effective weights (crossgrad's ``positive_matmul``).

  The kernel is (units, n_in), as in the layer-gradient Q&A and `torch.nn.Linear`. Its
  gradient passes only where it is positive, so an entry that an update takes to zero or
  below stops learning (like a dead ReLU). By default it starts uniform in ``[0, sqrt(6 /
  (n_in + units))]``: Glorot's range folded onto the non-negatives, so no weight starts dead.
  """

  def __init__(self, units: int, use_bias: bool = True, kernel_initializer=None, **kwargs):
    super().__init__(**kwargs)
    self.units = int(units)
    self.use_bias = bool(use_bias)
    self.kernel_initializer = (keras.initializers.get(kernel_initializer)
                               if kernel_initializer is not None else None)
    self._op = cg_keras.get("positive_matmul")

  def build(self, input_shape):
    n_in = int(input_shape[-1])
    init = self.kernel_initializer or keras.initializers.RandomUniform(
        0.0, math.sqrt(6.0 / (n_in + self.units)))
    self.kernel = self.add_weight(shape=(self.units, n_in), initializer=init, name="kernel")
    self.bias = (self.add_weight(shape=(self.units,), initializer="zeros", name="bias")
                 if self.use_bias else None)

  def call(self, inputs):
    y = self._op(inputs, self.kernel)
    return y + self.bias if self.use_bias else y

  def compute_output_shape(self, input_shape):
    return (*input_shape[:-1], self.units)

  @property
  def effective_kernel(self):
    """``relu(kernel)``: the weights the layer actually applies (all >= 0)."""
    return keras.ops.relu(self.kernel)

  def get_config(self):
    initializer = (keras.initializers.serialize(self.kernel_initializer)
                   if self.kernel_initializer is not None else None)
    return {**super().get_config(), "units": self.units, "use_bias": self.use_bias,
            "kernel_initializer": initializer}
