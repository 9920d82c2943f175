"""The Bernoulli mask in torch: Threefry words equal jax.random.bits, the same mask as JAX
and TensorFlow for the same seed (eagerly and compiled); the
Keras layer under torch is checked in tests/test_keras.py."""

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (crossgrad[torch])")

import jax  # pylint: disable=g-import-not-at-top,wrong-import-position
import jax.numpy as jnp  # pylint: disable=g-import-not-at-top,wrong-import-position

import crossgrad as cg  # pylint: disable=g-import-not-at-top,wrong-import-position

P = np.random.default_rng(0).uniform(size=(4, 8, 8, 1)).astype(np.float32)
FEATURES = np.ones((4, 8, 8, 3), np.float32)


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**32 - 1])
@pytest.mark.parametrize("shape", [(7,), (3, 5, 2), (64, 64, 1)])
def test_words_equal_jax_random_bits(seed, shape):
  want = np.asarray(jax.random.bits(jax.random.key(seed), shape, jnp.uint32))
  counters = torch.arange(int(np.prod(shape)), dtype=torch.int64).reshape(shape)
  got = cg.torch.bernoulli.threefry_bits(cg.torch.bernoulli.key(seed), counters)
  np.testing.assert_array_equal(got.numpy(), want.astype(np.int64))
  np.testing.assert_array_equal(cg.torch.uniform_noise(shape, seed).numpy(),
                                (want >> 8).astype(np.float32) / 2**24)


def test_same_seed_same_mask_as_jax_and_tensorflow_eager_and_compiled():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  p, features = torch.as_tensor(P), torch.as_tensor(FEATURES)
  compiled = torch.compile(cg.torch.bernoulli_mask_sampled, fullgraph=True)
  for seed in (3, (5, 6)):
    jax_key = (jax.random.key(seed) if isinstance(seed, int)
               else jax.random.wrap_key_data(jnp.array(seed, jnp.uint32)))
    want = np.asarray(cg.jax.bernoulli_mask_sampled(P, FEATURES, jax_key))
    tf_seed = tf.constant(seed, tf.int64)
    np.testing.assert_array_equal(
        cg.tensorflow.bernoulli_mask_sampled(P, FEATURES, tf_seed, "threefry").numpy(), want)
    np.testing.assert_array_equal(cg.torch.bernoulli_mask_sampled(p, features, seed).numpy(),
                                  want)
    np.testing.assert_array_equal(compiled(p, features, torch.tensor(seed)).numpy(), want)


def test_gradients_use_the_drawn_mask():
  p = torch.tensor(P, requires_grad=True)
  features = torch.tensor(FEATURES * 1.5, requires_grad=True)
  out = cg.torch.bernoulli_mask_sampled(p, features, 9)
  g = torch.as_tensor(np.random.default_rng(1).standard_normal(out.shape).astype(np.float32))
  out.backward(g)
  mask = (out.detach().numpy() != 0).astype(np.float32)
  np.testing.assert_allclose(p.grad.numpy(), np.sum(g.numpy() * FEATURES * 1.5, -1,
                                                    keepdims=True), rtol=1e-6)
  np.testing.assert_array_equal(features.grad.numpy(), g.numpy() * mask)


@pytest.mark.parametrize("name, value, index", [
    ("p", -0.25, (0, 1, 2, 0)), ("p", np.nan, (1, 0, 0, 0)), ("p", 1.0 + 1e-6, (1, 2, 3, 0)),
    ("u", 1.0, (0, 0, 1, 0)), ("u", -1e-7, (1, 1, 1, 0))])
def test_each_value_out_of_range_is_found_and_the_bounds_pass(name, value, index):
  """p in [0, 1] and u in [0, 1), ends included as the standard's ranges say."""
  values = {"p": P.copy(), "u": np.full(P.shape, 0.5, np.float32)}
  values["p"][0, 0, 0, 0], values["p"][0, 0, 1, 0], values["u"][0, 0, 2, 0] = 0.0, 1.0, 0.0
  out = cg.torch.bernoulli_mask(torch.as_tensor(values["p"]), torch.as_tensor(FEATURES),
                                torch.as_tensor(values["u"]))
  np.testing.assert_array_equal(out.detach().numpy(), np.where(
      values["u"] < values["p"], FEATURES, 0.0))
  values[name][index] = value
  with pytest.raises(cg.CrossgradError, match=rf"input '{name}'.*{re.escape(str(index))}"):
    cg.torch.bernoulli_mask(torch.as_tensor(values["p"]), torch.as_tensor(FEATURES),
                            torch.as_tensor(values["u"]))


def test_bad_values_and_seeds_raise():
  u = np.full(P.shape, 0.5, np.float32)
  bad = P.copy()
  bad[1, 2, 3, 0] = 1.5
  with pytest.raises(cg.CrossgradError, match=r"input 'p'.*\(1, 2, 3, 0\)"):
    cg.torch.bernoulli_mask(torch.as_tensor(bad), torch.as_tensor(FEATURES), torch.as_tensor(u))
  with pytest.raises(cg.CrossgradError, match="input 'p'"):
    cg.torch.bernoulli_mask_sampled(torch.as_tensor(bad), torch.as_tensor(FEATURES), 0)
  with pytest.raises(cg.CrossgradError, match="seed must be"):
    cg.torch.uniform_noise((3,), -1)
