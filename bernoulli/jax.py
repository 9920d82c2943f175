"""`bernoulli_mask` in JAX: with noise given, or sampled from a PRNG key."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from crossgrad.backends import jax as backend
from crossgrad.bernoulli import random_bits
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.ops import bernoulli_mask as op


def _concrete(*arrays: Any) -> bool:
  return not any(isinstance(x, jax.core.Tracer) for x in arrays)


def bernoulli_mask(p: Any, features: Any, u: Any) -> jax.Array:
  """``(u < p) * features`` with the surrogate gradient; checks values outside `jax.jit`.

  On concrete arrays ``p`` outside [0, 1] (or NaN) and ``u`` outside [0, 1) raise
  `CrossgradError`; traced (`jax.jit`, `jax.grad`) only shapes and dtypes are
  checked and the mask saturates (``p >= 1`` keeps, ``p <= 0`` and NaN drop).
  """
  if _concrete(p, u):
    op.check_values(np.asarray(p), np.asarray(u), backend=backend.NAME)
  return backend.get(op.NAME)(p, features, u)


def _key(key: Any) -> jax.Array:
  if isinstance(key, (int, np.integer)):
    return jax.random.key(int(key))
  key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) or key.shape == (2,):
    return key
  raise CrossgradError("key must be a PRNG key", backend=backend.NAME, argument="key",
                       expected="jax.random.key(...), a raw uint32[2] key or an int",
                       actual=f"{key.dtype}{list(key.shape)}")


def _threefry_words(key: jax.Array) -> jax.Array:
  """The uint32[2] Threefry key words of a typed or raw key."""
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    impl = str(jax.random.key_impl(key))
    if "threefry" not in impl:
      raise CrossgradError("example_offset needs a Threefry key", backend=backend.NAME,
                           argument="key", expected="a threefry2x32 key", actual=impl)
    key = jax.random.key_data(key)
  return key.astype(jnp.uint32)


def uniform_noise(key: Any, shape: Any, dtype: Any = jnp.float32, *,
                  example_offset: Any = 0) -> jax.Array:
  """Uniform noise in [0, 1): ``jax.random.bits`` made noise by `random_bits.uniform`.

  The same conversion as ``crossgrad.tensorflow.uniform_noise``, whose
  ``generator="threefry"`` gives these very values for the same seed. float64 is
  float32 unless x64 is on. ``example_offset=j0`` (an int or a traced integer, e.g. from
  ``jax.lax.axis_index``) makes row ``r`` the noise of global example ``j0 + r``: rows
  ``j0 ..`` of the noise drawn for the whole batch (`random_bits`), bitwise.
  """
  dtype = jax.dtypes.canonicalize_dtype(dtype)
  shape = tuple(shape)
  if isinstance(example_offset, int) and example_offset == 0:
    bits = jax.random.bits(_key(key), shape, jnp.uint32)
  else:
    random_bits.check_example_offset(example_offset, shape, backend.NAME)
    words = _threefry_words(_key(key))
    row_size = int(np.prod(shape[1:], dtype=np.int64))
    counters = jnp.arange(int(np.prod(shape, dtype=np.int64)), dtype=jnp.uint32).reshape(shape)
    counters = random_bits.example_counters(
        backend.xp, counters, jnp.uint32(row_size), jnp.asarray(example_offset, jnp.uint32))
    bits = random_bits.threefry_bits(backend.xp, words[0], words[1], counters)
  return random_bits.uniform(backend.xp, bits, dtype)


def bernoulli_mask_sampled(p: Any, features: Any, key: Any, *,
                           example_offset: Any = 0) -> jax.Array:
  """`bernoulli_mask` with noise drawn from ``key`` (a PRNG key or an int).

  The same key gives the same mask eagerly and under `jax.jit`, and the same mask as
  ``crossgrad.tensorflow.bernoulli_mask_sampled(..., generator="threefry")`` for the
  same seed. ``example_offset``: the global index of ``p``'s first row (`uniform_noise`).
  """
  p = jnp.asarray(p)
  if _concrete(p):
    op.check_values(np.asarray(p), backend=backend.NAME)
  u = uniform_noise(key, p.shape, p.dtype, example_offset=example_offset)
  return backend.get(op.NAME)(p, features, u)
