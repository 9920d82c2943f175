"""Keras layers for sparse activations (`crossgrad.SparseData` of the backend's tensors).

    conv = SubmanifoldConv2D(16, 3, activation="relu")
    down = SparseConv2D(32, 2, strides=2, activation="relu")
    book = crossgrad.sparse.submanifold_rulebook(x, 3)   # once per active set
    y = down(conv(x, rulebook=book))

`SubmanifoldConv2D` keeps the active sites (SAME, odd kernel); `SparseConv2D` is
sparse_cnn's VALID convolution, with ``strides`` a downsampling step. The activation is applied to
the active values and the ground state alike. Weights are created on the first call from
``x.dense_shape``. Keras accepts only tensors as positional arguments unless a layer
allows others: these layers do; a `keras.Model` that takes `SparseData` is called with
it as a keyword argument (``model(x=x)``).
"""

from __future__ import annotations

import keras

from crossgrad.api import keras as cg_keras
from crossgrad.sparse.data import SparseData


class _SparseLayer(keras.layers.Layer):
  """Kernel ``(f, f, n_in, filters)`` and bias; builds from ``x.dense_shape``."""

  def __init__(self, filters: int, kernel_size: int, activation=None,
               kernel_initializer="he_normal", bias_initializer="zeros", **kwargs):
    super().__init__(**kwargs)
    self._allow_non_tensor_positional_args = True  # pylint: disable=protected-access
    self.filters, self.kernel_size = int(filters), int(kernel_size)
    self.activation = keras.activations.get(activation)
    self.kernel_initializer = keras.initializers.get(kernel_initializer)
    self.bias_initializer = keras.initializers.get(bias_initializer)

  def build(self, input_shape):
    f = self.kernel_size
    self.kernel = self.add_weight(shape=(f, f, int(input_shape[-1]), self.filters),
                                  initializer=self.kernel_initializer, name="kernel")
    self.bias = self.add_weight(shape=(self.filters,), initializer=self.bias_initializer,
                                name="bias")

  def __call__(self, x: SparseData, rulebook=None, **kwargs):
    if not self.built:
      self.build(x.dense_shape)
      self.built = True
    if keras.backend.backend() == "torch":
      # Keras' torch call path takes a torch pytree node (`SparseData` is one) for a
      # sequence and asks its len(); the layer needs none of that path's conversions.
      return self.call(x, rulebook=rulebook)
    return super().__call__(x, rulebook=rulebook, **kwargs)

  def _weights(self):
    return cg_keras.tensor(self.kernel), cg_keras.tensor(self.bias)

  def _activate(self, y: SparseData) -> SparseData:
    return y.map(self.activation) if self.activation is not None else y

  def get_config(self):
    return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
            "activation": keras.activations.serialize(self.activation),
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer)}


@keras.saving.register_keras_serializable(package="crossgrad")
class SubmanifoldConv2D(_SparseLayer):
  """``submanifold_conv2d``: output sites = input sites (odd ``kernel_size``)."""

  def call(self, x, rulebook=None):
    return self._activate(cg_keras.framework().submanifold_conv2d(
        x, *self._weights(), rulebook=rulebook))


@keras.saving.register_keras_serializable(package="crossgrad")
class SparseConv2D(_SparseLayer):
  """``sparse_conv2d``: VALID, ``strides`` apart (a downsampling step when > 1);
  ``capacity`` is the static output row count (None: exact eagerly, a safe bound in jit)."""

  def __init__(self, filters: int, kernel_size: int, strides: int = 1,
               capacity: int | None = None, **kwargs):
    super().__init__(filters, kernel_size, **kwargs)
    self.strides, self.capacity = int(strides), capacity

  def call(self, x, rulebook=None):
    return self._activate(cg_keras.framework().sparse_conv2d(
        x, *self._weights(), self.kernel_size, stride=self.strides, capacity=self.capacity,
        rulebook=rulebook))

  def get_config(self):
    return {**super().get_config(), "strides": self.strides, "capacity": self.capacity}
