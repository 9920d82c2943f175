"""A backward right at its sample's shapes only (a porter test corpus): the second sample
of the proof, with resized axes, finds the size written as a literal."""

import numpy as np
import torch


class RowMean(torch.autograd.Function):
  """The mean over the last axis; the backward divides by 4, the sample's width."""

  @staticmethod
  def forward(ctx, x):
    ctx.shape = x.shape
    return x.mean(dim=-1)

  @staticmethod
  def backward(ctx, g):
    return g.unsqueeze(-1).expand(ctx.shape) / 4


SAMPLES = {"RowMean": lambda rng: (rng.standard_normal((3, 4)).astype(np.float32),)}
GRADIENTS = {"RowMean": "exact"}
