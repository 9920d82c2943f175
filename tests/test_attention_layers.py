"""The Keras layer and the JAX function of the Bernoulli attention mask."""

import jax
import keras
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad.layers import jax_attention_mask as attention_jax
from crossgrad.layers import keras_attention_mask as attention_keras

RNG = np.random.default_rng(0)
P = RNG.uniform(size=(3, 4, 4, 1)).astype(np.float32)
FEATURES = RNG.uniform(0.5, 1.5, (3, 4, 4, 2)).astype(np.float32)  # Never 0: out reveals m.
U = RNG.uniform(size=P.shape).astype(np.float32)
G = RNG.standard_normal(FEATURES.shape).astype(np.float32)


def _mask(out):
  return (np.asarray(out) != 0).astype(np.float32)


def test_keras_layer_with_noise_is_the_formula_with_the_surrogate_gradient():
  layer = attention_keras.BernoulliAttentionMask()
  p, features = tf.constant(P), tf.constant(FEATURES)
  with tf.GradientTape() as tape:
    tape.watch([p, features])
    out = layer(p, features, training=True, u=U)
  dp, dfeatures = tape.gradient(out, [p, features], output_gradients=G)
  m = (U < P).astype(np.float32)
  np.testing.assert_array_equal(out.numpy(), m * FEATURES)
  np.testing.assert_allclose(dp.numpy(), np.sum(G * FEATURES, -1, keepdims=True), rtol=1e-6)
  np.testing.assert_array_equal(dfeatures.numpy(), G * m)


def test_keras_layer_inference_is_the_expectation():
  layer = attention_keras.BernoulliAttentionMask()
  np.testing.assert_array_equal(layer(P, FEATURES, training=False).numpy(), P * FEATURES)
  sampled = attention_keras.BernoulliAttentionMask(sample_at_inference=True)(P, FEATURES)
  assert set(np.unique(_mask(sampled))) <= {0.0, 1.0}


def test_keras_layer_is_reproducible_by_seed_across_eager_and_xla():
  eager = attention_keras.BernoulliAttentionMask(seed=3)
  jitted = attention_keras.BernoulliAttentionMask(seed=3)
  step = tf.function(lambda p, f: jitted(p, f, training=True), jit_compile=True)
  runs = [([eager(P, FEATURES, training=True).numpy() for _ in range(3)]),
          ([step(P, FEATURES).numpy() for _ in range(3)])]
  for a, b in zip(*runs):
    np.testing.assert_array_equal(a, b)
  assert not np.array_equal(runs[0][0], runs[0][1])  # The step counter moves on.
  np.testing.assert_array_equal(  # Step k uses the stateless seed (seed, k).
      runs[0][2], cg.tensorflow.bernoulli_mask_sampled(P, FEATURES, tf.constant([3, 2])))
  assert int(eager.step.numpy()) == int(jitted.step.numpy()) == 3
  other = attention_keras.BernoulliAttentionMask(seed=4)(P, FEATURES, training=True)
  assert not np.array_equal(other.numpy(), runs[0][0])


def test_keras_layer_trains_in_a_functional_model_with_unknown_batch():
  p_in, f_in = keras.Input((4, 4, 1)), keras.Input((4, 4, 2))
  masked = attention_keras.BernoulliAttentionMask(seed=1)(p_in, f_in)
  model = keras.Model([p_in, f_in], keras.layers.Dense(1)(keras.layers.Flatten()(masked)))
  assert tuple(model.output.shape) == (None, 1)
  model.compile(optimizer="sgd", loss="mse")
  history = model.fit([P, FEATURES], np.ones((3, 1), np.float32), epochs=2, verbose=0)
  assert np.all(np.isfinite(history.history["loss"]))
  assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(
      model.layers[2])).get_config()["seed"] == 1


def test_jax_function_matches_the_formula_and_the_keras_layer():
  out, vjp = jax.vjp(lambda p, f: attention_jax.attention_mask(p, f, u=U), P, FEATURES)
  dp, dfeatures = vjp(G)
  m = (U < P).astype(np.float32)
  np.testing.assert_array_equal(out, m * FEATURES)
  np.testing.assert_allclose(dp, np.sum(G * FEATURES, -1, keepdims=True), rtol=1e-6)
  np.testing.assert_array_equal(dfeatures, G * m)
  keras_out = attention_keras.BernoulliAttentionMask()(P, FEATURES, training=True, u=U)
  np.testing.assert_array_equal(out, keras_out.numpy())
  np.testing.assert_array_equal(
      attention_jax.attention_mask(P, FEATURES, training=False), P * FEATURES)


def test_jax_function_is_reproducible_by_key_under_jit():
  key = jax.random.key(2)
  eager = attention_jax.attention_mask(P, FEATURES, key)
  jitted = jax.jit(attention_jax.attention_mask)(P, FEATURES, key)
  np.testing.assert_array_equal(eager, jitted)
  np.testing.assert_array_equal(eager, cg.jax.bernoulli_mask_sampled(P, FEATURES, key))
  with pytest.raises(cg.CrossgradError, match="needs a key"):
    attention_jax.attention_mask(P, FEATURES)
