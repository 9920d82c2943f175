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


def _bits(shape: Any, seed: tf.Tensor, generator: str, example_offset: Any) -> tf.Tensor:
  offset = not (isinstance(example_offset, int) and example_offset == 0)
  if generator == "philox" and not offset:
    return tf.random.stateless_uniform(shape, seed, minval=None, maxval=None,
                                       dtype=tf.uint32, alg="philox")
  if generator == "philox":
    raise CrossgradError("example_offset needs the threefry generator", backend=backend.NAME,
                         argument="generator", expected="'threefry'", actual="'philox'")
  if generator == "threefry":
    words = tf.cast(seed, tf.uint32)
    shape = tf.cast(shape, tf.int64)
    counters = tf.reshape(tf.cast(tf.range(tf.reduce_prod(shape)), tf.uint32), shape)
    if offset:
      row_size = tf.cast(tf.reduce_prod(shape[1:]), tf.uint32)
      counters = random_bits.example_counters(backend.xp, counters, row_size,
                                              tf.cast(example_offset, tf.uint32))
    return random_bits.threefry_bits(backend.xp, words[0], words[1], counters)
  raise CrossgradError("unknown generator", backend=backend.NAME, argument="generator",
                       expected=" or ".join(map(repr, GENERATORS)), actual=repr(generator))


def uniform_noise(shape: Any, seed: Any, dtype: Any = tf.float32,
                  generator: str = "philox", *, example_offset: Any = 0) -> tf.Tensor:
  """Uniform noise in [0, 1) from a seed (an int ``s``, taken as ``(0, s)``, or a pair).

  ``generator="philox"``: TF's stateless Philox words, the same in eager, graph and
  XLA (TF's own float conversion is not). ``"threefry"``: crossgrad's Threefry-2x32 in
  the neutral namespace with the seed pair as key words, which gives exactly
  ``crossgrad.jax.uniform_noise`` of ``jax.random.key(s)`` for ``0 <= s < 2**32`` (or
  of the raw key ``uint32[k0, k1]`` for a pair). Words become noise by `random_bits.uniform`.
  ``example_offset=j0`` (threefry only; an int or an integer tensor such as a replica's
  first example) makes row ``r`` the noise of global example ``j0 + r``: rows ``j0 ..`` of
  the noise drawn for the whole batch (`random_bits`), bitwise.
  """
  dtype = tf.as_dtype(dtype)
  if isinstance(shape, (tuple, list)) and all(isinstance(d, int) for d in shape):
    random_bits.check_example_offset(example_offset, shape, backend.NAME)
  bits = _bits(shape, _seed(seed), generator, example_offset)
  return random_bits.uniform(backend.xp, bits, dtype)


def bernoulli_mask_sampled(p: Any, features: Any, seed: Any, generator: str = "philox", *,
                           example_offset: Any = 0) -> tf.Tensor:
  """`bernoulli_mask` with noise `uniform_noise` draws from ``seed`` (int or pair).

  The same seed gives the same mask in eager mode, in `tf.function` and under
  ``jit_compile=True``; with ``generator="threefry"`` also the same mask as
  ``crossgrad.jax.bernoulli_mask_sampled`` with ``jax.random.key(seed)``.
  ``example_offset``: the global index of ``p``'s first row (`uniform_noise`).
  """
  p = tf.convert_to_tensor(p)
  if tf.executing_eagerly():
    op.check_values(p.numpy(), backend=backend.NAME)
  shape = p.shape.as_list() if p.shape.is_fully_defined() else tf.shape(p)
  u = uniform_noise(shape, seed, p.dtype, generator, example_offset=example_offset)
  u.set_shape(p.shape)
  return backend.get(op.NAME)(p, features, u)
