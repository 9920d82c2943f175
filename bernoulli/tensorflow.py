"""`bernoulli_mask` in TensorFlow: with noise given, or sampled from a stateless seed."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from crossgrad.backends import tensorflow as backend
from crossgrad.bernoulli import random_bits
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.ops import bernoulli_mask as op

GENERATORS = ("philox", "threefry")


def bernoulli_mask(p: Any, features: Any, u: Any) -> tf.Tensor:
  """``(u < p) * features`` with the surrogate gradient; checks values in eager mode.

  Eagerly, ``p`` outside [0, 1] (or NaN) and ``u`` outside [0, 1) raise
  `CrossgradError`; traced (`tf.function`, XLA) only shapes and dtypes are checked
  and the mask saturates (``p >= 1`` keeps, ``p <= 0`` and NaN drop).
  """
  p, features, u = (tf.convert_to_tensor(x) for x in (p, features, u))
  if tf.executing_eagerly():
    op.check_values(p.numpy(), u.numpy(), backend=backend.NAME)
  return backend.get(op.NAME)(p, features, u)


def _seed(seed: Any) -> tf.Tensor:
  """An int64 pair: a scalar ``s`` becomes ``(0, s)``."""
  seed = tf.convert_to_tensor(seed)
  if not seed.dtype.is_integer:
    raise CrossgradError("seed must be integer", backend=backend.NAME, argument="seed",
                         expected="an int or an int32/int64 tensor of shape [2]",
                         actual=seed.dtype.name)
  seed = tf.cast(seed, tf.int64)
  if seed.shape.rank == 0:
    return tf.stack([tf.zeros_like(seed), seed])
  if seed.shape.as_list() != [2]:
    raise CrossgradError("seed must be a scalar or a pair", backend=backend.NAME,
                         argument="seed", expected="shape [] or [2]", actual=str(seed.shape))
  return seed


def _bits(shape: Any, seed: tf.Tensor, generator: str) -> tf.Tensor:
  if generator == "philox":
    return tf.random.stateless_uniform(shape, seed, minval=None, maxval=None,
                                       dtype=tf.uint32, alg="philox")
  if generator == "threefry":
    words = tf.cast(seed, tf.uint32)
    size = tf.reduce_prod(tf.cast(shape, tf.int64))
    counters = tf.reshape(tf.cast(tf.range(size), tf.uint32), shape)
    return random_bits.threefry_bits(backend.xp, words[0], words[1], counters)
  raise CrossgradError("unknown generator", backend=backend.NAME, argument="generator",
                       expected=" or ".join(map(repr, GENERATORS)), actual=repr(generator))


def uniform_noise(shape: Any, seed: Any, dtype: Any = tf.float32,
                  generator: str = "philox") -> tf.Tensor:
  """Uniform noise in [0, 1) from a seed (an int ``s``, taken as ``(0, s)``, or a pair).

  ``generator="philox"``: TF's stateless Philox words, the same in eager, graph and
  XLA (TF's own float conversion is not). ``"threefry"``: crossgrad's Threefry-2x32 in
  the neutral namespace with the seed pair as key words, which gives exactly
  ``crossgrad.jax.uniform_noise`` of ``jax.random.key(s)`` for ``0 <= s < 2**32`` (or
  of the raw key ``uint32[k0, k1]`` for a pair). Words become noise by `random_bits.uniform`.
  """
  dtype = tf.as_dtype(dtype)
  return random_bits.uniform(backend.xp, _bits(shape, _seed(seed), generator), dtype)


def bernoulli_mask_sampled(p: Any, features: Any, seed: Any,
                           generator: str = "philox") -> tf.Tensor:
  """`bernoulli_mask` with noise `uniform_noise` draws from ``seed`` (int or pair).

  The same seed gives the same mask in eager mode, in `tf.function` and under
  ``jit_compile=True``; with ``generator="threefry"`` also the same mask as
  ``crossgrad.jax.bernoulli_mask_sampled`` with ``jax.random.key(seed)``.
  """
  p = tf.convert_to_tensor(p)
  if tf.executing_eagerly():
    op.check_values(p.numpy(), backend=backend.NAME)
  u = uniform_noise(tf.shape(p), seed, p.dtype, generator)
  u.set_shape(p.shape)
  return backend.get(op.NAME)(p, features, u)
