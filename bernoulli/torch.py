"""`bernoulli_mask` in PyTorch: with noise given, or sampled by crossgrad's Threefry.

The noise is `random_bits.threefry_bits` (written once in ``xp``) of the seed's key words,
so a seed gives the very mask ``crossgrad.jax.bernoulli_mask_sampled`` draws from
``jax.random.key(seed)`` and ``crossgrad.tensorflow.bernoulli_mask_sampled(...,
generator="threefry")`` from the same seed, eagerly, under `torch.compile` and on any
device. torch 2.13 has a uint32 dtype but no arithmetic for it on the CPU (add, shifts
and comparisons raise "not implemented for 'UInt32'"), so `WORDS` carries the uint32
words in int64 and reduces them modulo 2**32 wherever bits are combined: every result of
the hash is exact.
"""

from __future__ import annotations

from typing import Any

import torch

from crossgrad.backends import torch as backend
from crossgrad.bernoulli import random_bits
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.ops import bernoulli_mask as op

_MASK = 0xFFFFFFFF
_OP = backend.get(op.NAME)  # Fetched here: ops are made outside torch.compile's tracing.


def _low(x):
  return torch.bitwise_and(x, _MASK)


class _Words:
  """The namespace `random_bits` runs in here: uint32 words held in int64 tensors.

  Sums may exceed 32 bits (they stay far below 2**63); each bitwise step reads only the
  low 32 bits and returns them, so every word that leaves the hash is exact."""

  backend = backend.NAME
  int64, float16, bfloat16, float32, float64 = (torch.int64, torch.float16, torch.bfloat16,
                                                torch.float32, torch.float64)

  @staticmethod
  def bitwise_xor(a, b):
    return _low(torch.bitwise_xor(torch.as_tensor(a), b))

  @staticmethod
  def bitwise_or(a, b):
    return _low(torch.bitwise_or(torch.as_tensor(a), b))

  @staticmethod
  def bitwise_left_shift(x, n):
    return _low(torch.bitwise_left_shift(_low(x), n))

  @staticmethod
  def bitwise_right_shift(x, n):
    return torch.bitwise_right_shift(_low(x), n)  # Logical: the word is non-negative.

  left_shift, right_shift = bitwise_left_shift, bitwise_right_shift

  @staticmethod
  def zeros_like(x):
    return torch.zeros_like(x)

  @staticmethod
  def astype(x, dtype):
    return x.to(backend.as_dtype(dtype))


WORDS = _Words()


@torch.library.custom_op("crossgrad::threefry_bits", mutates_args=())
def threefry_bits(key: torch.Tensor, counters: torch.Tensor) -> torch.Tensor:
  """`random_bits.threefry_bits` of the key words ``key`` (int64[2]) in `WORDS`, as one
  opaque op: Inductor would take minutes (more with every round) to fuse the hash's deep
  graph of shifts, so under `torch.compile` it runs as these kernels, the same words."""
  return random_bits.threefry_bits(WORDS, key[0], key[1], counters)


@threefry_bits.register_fake
def _threefry_bits_shape(key, counters):
  del key
  return torch.empty_like(counters)


def bernoulli_mask(p: Any, features: Any, u: Any) -> torch.Tensor:
  """``(u < p) * features`` with the surrogate gradient; checks values outside compile.

  On eager tensors ``p`` outside [0, 1] (or NaN) and ``u`` outside [0, 1) raise
  `CrossgradError`; under `torch.compile` and `torch.func` transforms only shapes and
  dtypes are checked and the mask saturates (``p >= 1`` keeps, ``p <= 0`` and NaN drop).
  """
  op.check_values(p, u, backend=backend.NAME)
  return _OP(p, features, u)


def key(seed: Any, device: Any = None) -> torch.Tensor:
  """The Threefry key (int64[2]) of a seed: an int ``s`` is ``(0, s)`` (the data of
  ``jax.random.key(s)`` for 0 <= s < 2**32), a pair ``(k0, k1)`` the raw key
  ``uint32[k0, k1]``; integer tensors too (a scalar or a pair), unchecked under compile."""
  if isinstance(seed, torch.Tensor) and not seed.is_floating_point() and seed.ndim <= 1:
    seed = seed.to(device=device, dtype=torch.int64)
    if seed.ndim == 0:
      return torch.stack([torch.zeros_like(seed), seed])
    if seed.shape == (2,):
      return seed
  words = ((0, seed) if isinstance(seed, int) else tuple(seed)
           if isinstance(seed, (tuple, list)) else None)
  if (words is None or len(words) != 2
      or not all(isinstance(w, int) and 0 <= w <= _MASK for w in words)):
    raise CrossgradError("seed must be an int or a pair of uint32 words", backend=backend.NAME,
                         argument="seed", expected="s in [0, 2**32), (k0, k1) or such a tensor",
                         actual=repr(seed))
  return torch.tensor(words, dtype=torch.int64, device=device)


def uniform_noise(shape: Any, seed: Any, dtype: Any = torch.float32, *,
                  device: Any = None, example_offset: Any = 0) -> torch.Tensor:
  """Uniform noise in [0, 1) from a seed: Threefry-2x32 words made noise by
  `random_bits.uniform`, equal to ``crossgrad.jax.uniform_noise(seed, shape, dtype)``.
  ``example_offset=j0`` (an int or an integer tensor) makes row ``r`` the noise of global
  example ``j0 + r``: rows ``j0 ..`` of the whole batch's noise (`random_bits`), bitwise."""
  shape = tuple(int(d) for d in shape)
  random_bits.check_example_offset(example_offset, shape, backend.NAME)
  row_size = 1
  for d in shape[1:]:
    row_size *= d
  count = row_size * (shape[0] if shape else 1)
  counters = torch.arange(count, dtype=torch.int64, device=device).reshape(shape)
  if not (isinstance(example_offset, int) and example_offset == 0):
    offset = torch.as_tensor(example_offset, dtype=torch.int64, device=device)
    counters = random_bits.example_counters(WORDS, counters, row_size, offset)
  bits = threefry_bits(key(seed, device), counters)
  return random_bits.uniform(WORDS, bits, backend.as_dtype(dtype))


def bernoulli_mask_sampled(p: Any, features: Any, seed: Any, *,
                           example_offset: Any = 0) -> torch.Tensor:
  """`bernoulli_mask` with noise `uniform_noise` draws from ``seed`` (see `key`) on ``p``'s
  device: the mask JAX draws from ``jax.random.key(seed)`` (or the raw key), and TF's
  ``bernoulli_mask_sampled(..., generator="threefry")`` from the same seed.
  ``example_offset``: the global index of ``p``'s first row (`uniform_noise`)."""
  p = torch.as_tensor(p)
  op.check_values(p, backend=backend.NAME)
  return _OP(p, features, uniform_noise(p.shape, seed, p.dtype, device=p.device,
                                                example_offset=example_offset))
