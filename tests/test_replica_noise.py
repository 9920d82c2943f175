"""Replica-invariant noise: with ``example_offset``, R replicas draw the single-device mask.

For one key, global example ``j`` gets the same noise whether the batch is drawn at once
or split over 1, 2 or 4 replicas (each drawing its rows with its first example's index as
``example_offset``), in JAX, TensorFlow and PyTorch, eager and compiled, bitwise; the
oracle is ``jax.random.bits`` of the whole batch. Different examples get different noise.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf
import torch

import crossgrad as cg
from crossgrad.layers import BernoulliAttentionMask

BATCH = 8
P = np.random.default_rng(0).uniform(size=(BATCH, 4, 4, 1)).astype(np.float32)
FEATURES = np.ones((BATCH, 4, 4, 2), np.float32)
SEED = 11


@jax.jit
def _jitted(p, f, offset):
  return cg.jax.bernoulli_mask_sampled(p, f, jax.random.key(SEED), example_offset=offset)


def _jax(p, f, offset):
  return np.asarray(_jitted(p, f, offset))


def _jax_eager(p, f, offset):
  return np.asarray(cg.jax.bernoulli_mask_sampled(p, f, SEED, example_offset=offset))


def _tf(mode):
  def draw(p, f, offset):
    return cg.tensorflow.bernoulli_mask_sampled(p, f, SEED, "threefry", example_offset=offset)
  if mode != "eager":
    draw = tf.function(draw, jit_compile=(mode == "jit"), autograph=False)
  return lambda p, f, offset: draw(p, f, tf.constant(offset)).numpy()


def _torch(compiled):
  draw = cg.torch.bernoulli_mask_sampled
  if compiled:
    draw = torch.compile(draw, fullgraph=True)
  return lambda p, f, offset: draw(torch.as_tensor(p), torch.as_tensor(f), SEED,
                                   example_offset=torch.tensor(offset)).numpy()


DRAWS = {"jax_jit": _jax, "jax_eager": _jax_eager, "tf_eager": _tf("eager"),
         "tf_graph": _tf("graph"), "tf_jit": _tf("jit"), "torch_eager": _torch(False),
         "torch_compile": _torch(True)}


def _oracle():
  """The mask of the whole batch from ``jax.random.bits``: no offset involved."""
  bits = np.asarray(jax.random.bits(jax.random.key(SEED), P.shape, jnp.uint32))
  u = (bits >> 8).astype(np.float32) / 2**24
  return (u < P) * FEATURES


@pytest.mark.parametrize("name", sorted(DRAWS))
@pytest.mark.parametrize("replicas", [1, 2, 4])
def test_replicas_draw_the_single_device_mask_bitwise(name, replicas):
  rows = BATCH // replicas
  parts = [DRAWS[name](P[r * rows:(r + 1) * rows], FEATURES[r * rows:(r + 1) * rows], r * rows)
           for r in range(replicas)]
  np.testing.assert_array_equal(np.concatenate(parts), _oracle())


def test_replicas_masks_differ_and_offset_zero_is_the_old_draw():
  half = BATCH // 2
  first = _jax(P[:half], FEATURES[:half], 0)
  second = _jax(P[half:], FEATURES[half:], half)
  repeated = _jax(P[half:], FEATURES[half:], 0)  # The classic bug: every replica at 0.
  assert not np.array_equal(second, repeated)
  uniform = lambda offset: np.asarray(cg.jax.uniform_noise(SEED, (half, 16), example_offset=offset))
  assert not np.array_equal(uniform(0), uniform(half))
  np.testing.assert_array_equal(first, np.asarray(cg.jax.bernoulli_mask_sampled(
      P[:half], FEATURES[:half], SEED)))


def test_keras_layer_takes_the_offset():
  layer = BernoulliAttentionMask(seed=SEED, generator="threefry")
  whole = layer(P, FEATURES, training=True).numpy()
  layer.step.assign(0)
  parts = [layer(P[:4], FEATURES[:4], training=True, example_offset=0).numpy()]
  layer.step.assign(0)
  parts.append(layer(P[4:], FEATURES[4:], training=True, example_offset=4).numpy())
  np.testing.assert_array_equal(np.concatenate(parts), whole)


def test_bad_offsets_are_clear_errors():
  with pytest.raises(cg.CrossgradError, match="example_offset out of range"):
    cg.jax.uniform_noise(0, (4, 3), example_offset=-1)
  with pytest.raises(cg.CrossgradError, match="example_offset out of range"):
    cg.torch.uniform_noise((4, 2**30), 0, example_offset=2)
  with pytest.raises(cg.CrossgradError, match="threefry generator"):
    cg.tensorflow.uniform_noise((4, 3), 0, example_offset=4)
