"""`bernoulli_mask` in TensorFlow: with noise given, or sampled from a stateless seed."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from crossgrad.backends import tensorflow as backend
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.ops import bernoulli_mask as op


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
  seed = tf.convert_to_tensor(seed)
  if not seed.dtype.is_integer:
    raise CrossgradError("seed must be integer", backend=backend.NAME, argument="seed",
                         expected="an int or an int32/int64 tensor of shape [2]",
                         actual=seed.dtype.name)
  seed = tf.cast(seed, tf.int64)
  if seed.shape.rank == 0:
    return tf.stack([seed, tf.zeros_like(seed)])
  if seed.shape.as_list() != [2]:
    raise CrossgradError("seed must be a scalar or a pair", backend=backend.NAME,
                         argument="seed", expected="shape [] or [2]", actual=str(seed.shape))
  return seed


def uniform_noise(shape: Any, seed: Any, dtype: Any = tf.float32) -> tf.Tensor:
  """Uniform noise in [0, 1): ``bits >> (32 - k)`` over ``2**k`` for k = `op.NOISE_BITS`.

  The bits come from the stateless Philox generator, which gives the same words in
  eager, graph and XLA; TensorFlow's own float conversion differs under XLA, hence
  this one. Every value is exact in ``dtype`` and below 1.
  """
  dtype = tf.as_dtype(dtype)
  bits = tf.random.stateless_uniform(shape, _seed(seed), minval=None, maxval=None,
                                     dtype=tf.uint32, alg="philox")
  k = op.NOISE_BITS[dtype.name]
  return tf.cast(tf.bitwise.right_shift(bits, tf.constant(32 - k, tf.uint32)), dtype) * (2.0 ** -k)


def bernoulli_mask_sampled(p: Any, features: Any, seed: Any) -> tf.Tensor:
  """`bernoulli_mask` with noise drawn from ``seed`` (an int or an int pair).

  The same seed gives the same mask in eager mode, in `tf.function` and under
  ``jit_compile=True``.
  """
  p = tf.convert_to_tensor(p)
  if tf.executing_eagerly():
    op.check_values(p.numpy(), backend=backend.NAME)
  u = uniform_noise(tf.shape(p), seed, p.dtype)
  u.set_shape(p.shape)
  return backend.get(op.NAME)(p, features, u)
