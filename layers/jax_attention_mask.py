"""`attention_mask`: the Bernoulli attention mask (arXiv 1710.11446) as a plain JAX function."""

from __future__ import annotations

from typing import Any

import jax

import crossgrad.api.jax as cg_jax
from crossgrad.registry.errors import CrossgradError


def attention_mask(p: Any, features: Any, key: Any = None, *, u: Any = None,
                   training: bool = True, sample_at_inference: bool = False) -> jax.Array:
  """Multiplies ``features`` by a Bernoulli sample of the attention map ``p``.

  Training (or ``sample_at_inference``): ``crossgrad.jax.bernoulli_mask_sampled`` with
  ``key``, or ``crossgrad.jax.bernoulli_mask`` with the noise ``u``; the gradient is
  the surrogate ``dp = g * features`` (summed where ``p`` broadcasts). Otherwise the
  expectation ``p * features``. The JAX counterpart of
  `crossgrad.layers.keras_attention_mask.BernoulliAttentionMask`: pure, so the caller splits keys.
  """
  if not (training or sample_at_inference):
    return p * features
  if u is not None:
    return cg_jax.bernoulli_mask(p, features, u)
  if key is None:
    raise CrossgradError("sampling needs a key or noise", op="bernoulli_mask", backend="jax",
                         argument="key", expected="a PRNG key, or u=<noise>", actual="None")
  return cg_jax.bernoulli_mask_sampled(p, features, key)
