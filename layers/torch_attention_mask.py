"""`BernoulliAttentionMask`: the Bernoulli attention mask (arXiv 1710.11446) as a
`torch.nn.Module`."""

from __future__ import annotations

from typing import Any

import torch

import crossgrad.api.torch as cg_torch


class BernoulliAttentionMask(torch.nn.Module):
  """Multiplies ``features`` by a Bernoulli sample of the attention map ``p``.

  In training mode (or with ``sample_at_inference``) ``module(p, features)`` is
  ``crossgrad.torch.bernoulli_mask_sampled`` (surrogate gradient ``dp = g * features``,
  summed where ``p`` broadcasts) with the raw Threefry key ``(seed, step)``, where ``step``
  is a buffer advanced by every sampling call: call ``k`` draws the mask JAX draws from
  ``jax.random.wrap_key_data(uint32[seed, k])`` and the Keras layer
  (`crossgrad.layers.keras_attention_mask`, ``generator="threefry"``) at its step ``k``,
  eagerly and under `torch.compile`. Pass ``u=`` to supply the noise instead. In eval
  mode it returns the expectation ``p * features``.
  """

  def __init__(self, seed: int = 0, sample_at_inference: bool = False):
    super().__init__()
    cg_torch.bernoulli.key((int(seed), 0))  # A clear error for a seed outside uint32.
    self.seed = int(seed)
    self.sample_at_inference = bool(sample_at_inference)
    self.register_buffer("step", torch.zeros((), dtype=torch.int64))

  def forward(self, p: torch.Tensor, features: torch.Tensor, u: Any = None) -> torch.Tensor:
    if not (self.training or self.sample_at_inference):
      return p * features
    if u is not None:
      return cg_torch.bernoulli_mask(p, features, u)
    key = torch.stack([torch.full_like(self.step, self.seed), self.step])
    self.step.add_(1)
    return cg_torch.bernoulli_mask_sampled(p, features, key)

  def extra_repr(self) -> str:
    return f"seed={self.seed}, sample_at_inference={self.sample_at_inference}"
