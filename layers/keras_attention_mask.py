"""`BernoulliAttentionMask`: the Bernoulli attention mask (arXiv 1710.11446) as a Keras 3
layer (TF)."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

import crossgrad.api.tensorflow as cg_tf
from crossgrad.registry.errors import CrossgradError


@keras.saving.register_keras_serializable(package="crossgrad")
class BernoulliAttentionMask(keras.layers.Layer):
  """Multiplies ``features`` by a Bernoulli sample of the attention map ``p``.

  ``layer(p, features, training=True)`` is ``crossgrad.tensorflow.bernoulli_mask_sampled``
  (surrogate gradient ``dp = g * features``, summed where ``p`` broadcasts); the noise
  comes from the stateless seed ``(seed, step)``, where ``step`` is a non-trainable
  counter advanced by every training call, so a run is reproducible from ``seed`` in
  eager mode, `tf.function` and XLA alike. With ``generator="threefry"`` step ``k``
  draws the mask JAX draws from the raw key ``uint32[seed, k]``
  (``jax.random.wrap_key_data``). Pass ``u=`` to supply the noise instead. At
  inference the layer returns the expectation ``p * features``, or a sample with
  ``sample_at_inference=True``.
  """

  def __init__(self, seed: int = 0, sample_at_inference: bool = False,
               generator: str = "philox", **kwargs: Any):
    super().__init__(**kwargs)
    if keras.backend.backend() != "tensorflow":
      raise CrossgradError("this layer runs on Keras' TensorFlow backend",
                           backend="tensorflow", argument="keras.backend.backend()",
                           expected="'tensorflow'", actual=repr(keras.backend.backend()),
                           hint="Use crossgrad.layers.jax_attention_mask.attention_mask with JAX")
    if generator not in cg_tf.GENERATORS:
      raise CrossgradError("unknown generator", backend="tensorflow", argument="generator",
                           expected=" or ".join(map(repr, cg_tf.GENERATORS)),
                           actual=repr(generator))
    self.seed = int(seed)
    self.generator = generator
    self.sample_at_inference = bool(sample_at_inference)
    self.step = self.add_weight(name="step", shape=(), dtype="int64", initializer="zeros",
                                trainable=False)

  def call(self, p, features, training=None, u=None):
    if not (training or self.sample_at_inference):
      return p * features
    if u is not None:
      return cg_tf.bernoulli_mask(p, features, u)
    step = tf.convert_to_tensor(self.step.value)
    self.step.assign_add(1)
    seed = tf.stack([tf.constant(self.seed, tf.int64), step])
    return cg_tf.bernoulli_mask_sampled(p, features, seed, self.generator)

  def compute_output_shape(self, p_shape, features_shape):
    return tuple(tf.broadcast_static_shape(tf.TensorShape(p_shape),
                                           tf.TensorShape(features_shape)).as_list())

  def get_config(self):
    return {**super().get_config(), "seed": self.seed,
            "sample_at_inference": self.sample_at_inference, "generator": self.generator}
