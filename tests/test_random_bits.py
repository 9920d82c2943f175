"""Threefry-2x32 written once in ``xp``: known answers, jax.random's bits, equal masks."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad.bernoulli import random_bits
from crossgrad.layers import BernoulliAttentionMask

# Known-answer vectors of Threefry-2x32-20 from Random123 (kat_vectors): key, counter, output.
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
]
TF_MODES = ("eager", "graph", "jit")


def _tf(fn, mode):
  return fn if mode == "eager" else tf.function(fn, jit_compile=(mode == "jit"),
                                                autograph=False)


def _words(*values):
  # Arrays, not 0-d: NumPy warns on wrap-around in scalar (0-d) arithmetic only.
  return [np.asarray([v], np.uint32) for v in values]


@pytest.mark.parametrize("key, counter, want", KNOWN_ANSWERS)
def test_known_answers_in_every_backend(key, counter, want):
  with warnings.catch_warnings():
    warnings.simplefilter("error")  # uint32 wrap-around must not warn in NumPy.
    got = random_bits.threefry2x32(cg.numpy.xp, *_words(*key, *counter))
  assert tuple(int(g[0]) for g in got) == want
  args = [tf.constant(w) for w in _words(*key, *counter)]
  for mode in TF_MODES:
    got = _tf(lambda *a: random_bits.threefry2x32(cg.tensorflow.xp, *a), mode)(*args)
    assert tuple(int(g.numpy()[0]) for g in got) == want, mode
  fn = lambda *a: random_bits.threefry2x32(cg.jax.xp, *a)
  for run in (fn, jax.jit(fn)):
    got = run(*[jnp.asarray(w) for w in _words(*key, *counter)])
    assert tuple(int(g[0]) for g in got) == want


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**32 - 1])
@pytest.mark.parametrize("shape", [(7,), (3, 5, 2), (64, 64, 1)])
def test_bits_equal_jax_random_bits(seed, shape):
  key = jax.random.key(seed)
  want = np.asarray(jax.random.bits(key, shape, jnp.uint32))
  k0, k1 = np.asarray(jax.random.key_data(key), np.uint32)
  counters = np.arange(np.prod(shape), dtype=np.uint32).reshape(shape)
  np.testing.assert_array_equal(random_bits.threefry_bits(cg.numpy.xp, k0, k1, counters), want)
  np.testing.assert_array_equal(jax.jit(lambda *a: random_bits.threefry_bits(cg.jax.xp, *a))(
      k0, k1, counters), want)
  for mode in TF_MODES:
    noise = _tf(lambda s: cg.tensorflow.uniform_noise(shape, s, generator="threefry"), mode)
    np.testing.assert_array_equal(
        noise(tf.constant(seed, tf.int64)).numpy(), (want >> 8).astype(np.float32) / 2**24)


@pytest.mark.parametrize("mode", TF_MODES)
def test_same_seed_same_mask_in_tensorflow_and_jax(mode):
  p = np.random.default_rng(0).uniform(size=(4, 8, 8, 1)).astype(np.float32)
  features = np.ones((4, 8, 8, 3), np.float32)
  run = _tf(lambda p, f, s: cg.tensorflow.bernoulli_mask_sampled(p, f, s, "threefry"), mode)
  for seed in (3, 4):
    tf_mask = run(p, features, tf.constant(seed, tf.int64)).numpy()
    jax_mask = jax.jit(cg.jax.bernoulli_mask_sampled)(p, features, jax.random.key(seed))
    np.testing.assert_array_equal(tf_mask, jax_mask)
  pair = run(p, features, tf.constant([5, 6], tf.int64)).numpy()
  raw = jax.random.wrap_key_data(jnp.array([5, 6], jnp.uint32))
  np.testing.assert_array_equal(pair, cg.jax.bernoulli_mask_sampled(p, features, raw))


def test_threefry_with_unknown_batch_size():
  p = np.random.default_rng(0).uniform(size=(6, 5, 1)).astype(np.float32)
  features = np.ones((6, 5, 2), np.float32)
  run = tf.function(lambda p, f: cg.tensorflow.bernoulli_mask_sampled(p, f, 9, "threefry"),
                    input_signature=[tf.TensorSpec((None, 5, 1)), tf.TensorSpec((None, 5, 2))],
                    autograph=False)
  np.testing.assert_array_equal(run(p, features).numpy(),
                                cg.jax.bernoulli_mask_sampled(p, features, 9))


def test_keras_layer_with_threefry_follows_jax_raw_keys():
  p = np.random.default_rng(1).uniform(size=(2, 6, 6, 1)).astype(np.float32)
  features = np.ones((2, 6, 6, 2), np.float32)
  layer = BernoulliAttentionMask(seed=7, generator="threefry")
  for step in range(2):
    key = jax.random.wrap_key_data(jnp.array([7, step], jnp.uint32))
    np.testing.assert_array_equal(layer(p, features, training=True).numpy(),
                                  cg.jax.bernoulli_mask_sampled(p, features, key))


def test_unknown_generator_is_a_clear_error():
  with pytest.raises(cg.CrossgradError, match="unknown generator"):
    cg.tensorflow.uniform_noise((3,), 0, generator="mt19937")
