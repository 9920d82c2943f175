"""Functions the port cannot carry, each for its own reason (test corpus)."""

import torch


class NoisyRelu(torch.autograd.Function):
  """Adds noise in the forward: randomness."""

  @staticmethod
  def forward(ctx, x):
    noise = torch.randn_like(x) * 0.01
    ctx.save_for_backward(x)
    return torch.relu(x + noise)

  @staticmethod
  def backward(ctx, g):
    (x,) = ctx.saved_tensors
    return g * (x > 0).float()


class SignFlip(torch.autograd.Function):
  """Branches on the values of its input, and writes its gradient in place."""

  @staticmethod
  def forward(ctx, x):
    ctx.save_for_backward(x)
    if x.sum() > 0:
      return x * 2
    return -x

  @staticmethod
  def backward(ctx, g):
    (x,) = ctx.saved_tensors
    g.mul_(2)
    return g


class Unsampled(torch.autograd.Function):
  """Correct, but without a sample nothing can prove it."""

  @staticmethod
  def forward(ctx, x):
    ctx.save_for_backward(x)
    return torch.exp(x)

  @staticmethod
  def backward(ctx, g):
    (x,) = ctx.saved_tensors
    return g * torch.exp(x)


SAMPLES = {"NoisyRelu": lambda rng: (rng.standard_normal((3, 4)),),
           "SignFlip": lambda rng: (rng.standard_normal((3, 4)),)}
