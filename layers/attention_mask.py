"""`BernoulliAttentionMask`: the Bernoulli attention mask (arXiv 1710.11446) as a Keras 3
layer."""

from __future__ import annotations

from typing import Any

import keras

from crossgrad.api import keras as cg_keras
from crossgrad.registry.errors import CrossgradError

GENERATORS = ("threefry", "philox")


def _sampled(fw, p, features, seed, step, generator, example_offset):
  """``fw.bernoulli_mask_sampled`` with the key words ``(seed, step)`` in each framework."""
  if fw.NAME == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    key = tf.stack([tf.constant(seed, tf.int64), tf.cast(step, tf.int64)])
    return fw.bernoulli_mask_sampled(p, features, key, generator,
                                     example_offset=example_offset)
  if fw.NAME == "jax":
    import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
    return fw.bernoulli_mask_sampled(p, features, jnp.stack(
        [jnp.uint32(seed), step.astype(jnp.uint32)]), example_offset=example_offset)
  key = keras.ops.stack([keras.ops.full_like(step, seed), step])
  return fw.bernoulli_mask_sampled(p, features, key, example_offset=example_offset)


@keras.saving.register_keras_serializable(package="crossgrad")
class BernoulliAttentionMask(keras.layers.Layer):
  """Multiplies ``features`` by a Bernoulli sample of the attention map ``p``.

  ``layer(p, features, training=True)`` is the backend's ``bernoulli_mask_sampled``
  (surrogate gradient ``dp = g * features``, summed where ``p`` broadcasts). The noise
  comes from the key words ``(seed, step)``, where ``step`` is a non-trainable counter
  advanced by every sampling call, so a run is reproducible from ``seed`` eagerly and
  compiled. With ``generator="threefry"`` (the default) step ``k`` draws, on every backend,
  the mask JAX draws from the raw key ``uint32[seed, k]`` (``jax.random.wrap_key_data``);
  ``"philox"`` (TensorFlow only) uses TF's stateless Philox. Pass ``u=`` to supply the
  noise instead. In data-parallel training pass ``example_offset=`` (threefry), the
  global index of this replica's first example: every replica then draws its rows of the
  single-device mask, bitwise (`crossgrad.bernoulli.random_bits`). At inference the layer returns the expectation ``p * features``, or a
  sample with ``sample_at_inference=True``.
  """

  def __init__(self, seed: int = 0, sample_at_inference: bool = False,
               generator: str = "threefry", **kwargs: Any):
    super().__init__(**kwargs)
    if generator not in GENERATORS:
      raise CrossgradError("unknown generator", backend=cg_keras.NAME, argument="generator",
                           expected=" or ".join(map(repr, GENERATORS)), actual=repr(generator))
    if not 0 <= int(seed) < 2**31:
      raise CrossgradError("seed out of range", backend=cg_keras.NAME, argument="seed",
                           expected="0 <= seed < 2**31", actual=repr(seed))
    self.seed = int(seed)
    self.generator = generator
    self.sample_at_inference = bool(sample_at_inference)
    self.step = self.add_weight(name="step", shape=(), dtype="int32", initializer="zeros",
                                trainable=False)

  def call(self, p, features, training=None, u=None, example_offset=0):
    if not (training or self.sample_at_inference):
      return p * features
    fw = cg_keras.framework()
    if u is not None:
      return fw.bernoulli_mask(p, features, u)
    if self.generator == "philox" and fw.NAME != "tensorflow":
      raise CrossgradError("the philox generator is TensorFlow's", backend=fw.NAME,
                           argument="generator", expected="'threefry'", actual="'philox'")
    step = keras.ops.convert_to_tensor(self.step)  # On TF and torch the variable itself:
    out = _sampled(fw, p, features, self.seed, step, self.generator,  # sample, then count.
                   example_offset)
    self.step.assign(step + 1)
    return out

  def compute_output_shape(self, p_shape, features_shape):
    return tuple(_broadcast(a, b) for a, b in zip(*_aligned(p_shape, features_shape)))

  def get_config(self):
    return {**super().get_config(), "seed": self.seed,
            "sample_at_inference": self.sample_at_inference, "generator": self.generator}


def _aligned(a, b):
  """Two shapes padded with leading ones to the same rank."""
  n = max(len(a), len(b))
  return (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)


def _broadcast(a, b):
  """One broadcast dimension; None (unknown) gives way to a known size other than 1."""
  if a == 1:
    return b
  return a if b == 1 or b is None or a == b else b if a is None else a
