"""Straight-through and reversed gradients, and a backward with a real bug (test corpus)."""

import torch


class RoundSTE(torch.autograd.Function):
  """round(x) forward, identity gradient inside [-1, 1]: a straight-through estimator."""

  @staticmethod
  def forward(ctx, x):
    ctx.save_for_backward(x)
    return torch.round(x)

  @staticmethod
  def backward(ctx, g):
    (x,) = ctx.saved_tensors
    return g * (x.abs() <= 1).float()


class LogCosh(torch.autograd.Function):
  """log(cosh(x)); its backward doubles the derivative (the bug the check finds)."""

  @staticmethod
  def forward(ctx, x):
    ctx.save_for_backward(x)
    return torch.log(torch.cosh(x))

  @staticmethod
  def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return 2 * grad_output * torch.tanh(x)


class ReverseGrad(torch.autograd.Function):
  """Identity forward, -alpha * g backward (domain-adversarial training), undeclared."""

  @staticmethod
  def forward(ctx, x, alpha):
    ctx.alpha = alpha
    return x.view_as(x)

  @staticmethod
  def backward(ctx, grad_output):
    return grad_output.neg() * ctx.alpha, None


SAMPLES = {
    "RoundSTE": lambda rng: (rng.uniform(-2, 2, (3, 4)),),
    "LogCosh": lambda rng: (rng.standard_normal((3, 4)),),
    "ReverseGrad": lambda rng: (rng.standard_normal((3, 4)), 0.5),
}
GRADIENTS = {"RoundSTE": "surrogate", "LogCosh": "exact"}
