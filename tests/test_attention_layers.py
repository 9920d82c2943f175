"""The Bernoulli attention mask layer under Keras' TensorFlow backend (the other backends:
tests/test_keras.py)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad.layers import BernoulliAttentionMask

RNG = np.random.default_rng(0)
P = RNG.uniform(size=(3, 4, 4, 1)).astype(np.float32)
FEATURES = RNG.uniform(0.5, 1.5, (3, 4, 4, 2)).astype(np.float32)  # Never 0: out reveals m.
U = RNG.uniform(size=P.shape).astype(np.float32)
G = RNG.standard_normal(FEATURES.shape).astype(np.float32)


def _mask(out):
  return (np.asarray(out) != 0).astype(np.float32)


def test_keras_layer_with_noise_is_the_formula_with_the_surrogate_gradient():
  layer = BernoulliAttentionMask()
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
  layer = BernoulliAttentionMask()
  np.testing.assert_array_equal(layer(P, FEATURES, training=False).numpy(), P * FEATURES)
  sampled = BernoulliAttentionMask(sample_at_inference=True)(P, FEATURES)
  assert set(np.unique(_mask(sampled))) <= {0.0, 1.0}


def test_keras_layer_is_reproducible_by_seed_across_eager_and_xla():
  eager = BernoulliAttentionMask(seed=3, generator="philox")
  jitted = BernoulliAttentionMask(seed=3, generator="philox")
  step = tf.function(lambda p, f: jitted(p, f, training=True), jit_compile=True)
  runs = [([eager(P, FEATURES, training=True).numpy() for _ in range(3)]),
          ([step(P, FEATURES).numpy() for _ in range(3)])]
  for a, b in zip(*runs):
    np.testing.assert_array_equal(a, b)
  assert not np.array_equal(runs[0][0], runs[0][1])  # The step counter moves on.
  np.testing.assert_array_equal(  # Step k uses the stateless seed (seed, k).
      runs[0][2], cg.tensorflow.bernoulli_mask_sampled(P, FEATURES, tf.constant([3, 2]),
                                                       "philox"))
  assert int(eager.step.numpy()) == int(jitted.step.numpy()) == 3
  other = BernoulliAttentionMask(seed=4, generator="philox")(P, FEATURES, training=True)
  assert not np.array_equal(other.numpy(), runs[0][0])


def test_keras_layer_trains_in_a_functional_model_with_unknown_batch():
  p_in, f_in = keras.Input((4, 4, 1)), keras.Input((4, 4, 2))
  masked = BernoulliAttentionMask(seed=1)(p_in, f_in)
  model = keras.Model([p_in, f_in], keras.layers.Dense(1)(keras.layers.Flatten()(masked)))
  assert tuple(model.output.shape) == (None, 1)
  model.compile(optimizer="sgd", loss="mse")
  history = model.fit([P, FEATURES], np.ones((3, 1), np.float32), epochs=2, verbose=0)
  assert np.all(np.isfinite(history.history["loss"]))
  assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(
      model.layers[2])).get_config()["seed"] == 1


def test_philox_is_refused_off_tensorflow_and_bad_arguments_are_clear(monkeypatch):
  with pytest.raises(cg.CrossgradError, match="unknown generator"):
    BernoulliAttentionMask(generator="mt19937")
  with pytest.raises(cg.CrossgradError, match="seed out of range"):
    BernoulliAttentionMask(seed=-1)
  layer = BernoulliAttentionMask(generator="philox")
  monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
  with pytest.raises(cg.CrossgradError, match="philox generator is TensorFlow's"):
    layer(P, FEATURES, training=True)
