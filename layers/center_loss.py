"""`CenterLoss`: a Keras layer holding the class centers, trained by the paper's rule."""

from __future__ import annotations

import keras

from crossgrad.api import keras as cg_keras


@keras.saving.register_keras_serializable(package="crossgrad")
class CenterLoss(keras.layers.Layer):
  """``weight * center_loss(features, labels, centers)`` with trainable centers.

  The centers (K, d) start at zero and are an ordinary trainable weight: their gradient
  is ``weight * delta c`` (the paper's update), so plain SGD with learning rate ``alpha /
  weight`` on them applies ``c_j <- c_j - alpha * delta c_j``. ``labels`` are int32.
  """

  def __init__(self, num_classes: int, weight: float = 1.0, **kwargs):
    super().__init__(**kwargs)
    self.num_classes = int(num_classes)
    self.weight = float(weight)
    self._op = cg_keras.get("center_loss")

  def build(self, features_shape, labels_shape=None):
    del labels_shape
    self.centers = self.add_weight(shape=(self.num_classes, int(features_shape[-1])),
                                   initializer="zeros", name="centers")

  def call(self, features, labels):
    return self.weight * self._op(features, labels, self.centers)

  def compute_output_shape(self, features_shape, labels_shape=None):
    del features_shape, labels_shape
    return ()

  def get_config(self):
    return {**super().get_config(), "num_classes": self.num_classes, "weight": self.weight}
