"""The built-in ops (and `handwritten.STE_SIGN`) written by hand as `torch.autograd.Function`s:
the torch baselines of `overhead` and `torch_overhead`.

Each is what a user would write without crossgrad: the op's forward and backward formulas
in torch, ``setup_context`` style (so ``torch.compile`` traces them), with no validation.
`BASELINES` maps the op's name to ``apply``; `sparse_q` has none yet.
"""

from __future__ import annotations

import torch


class _SavesInput(torch.autograd.Function):
  """A function of one input whose backward reads that input."""

  @staticmethod
  def setup_context(ctx, inputs, output):
    del output
    ctx.save_for_backward(inputs[0])


class LeakyRelu(_SavesInput):
  """``where(x > 0, x, 0.2 x)``."""

  @staticmethod
  def forward(x):
    return torch.where(x > 0, x, 0.2 * x)

  @staticmethod
  def backward(ctx, g):
    (x,) = ctx.saved_tensors
    return torch.where(x > 0, g, 0.2 * g)


class CustomAdd(torch.autograd.Function):
  """``c + k`` with the seeds' gradient ``((c + k + d) g, d g, (c + k) g)``, with the op's
  formulas (its backward recomputes ``e = c + k`` from the saved inputs)."""

  @staticmethod
  def forward(c, k, d):
    return c + k

  @staticmethod
  def setup_context(ctx, inputs, output):
    del output
    ctx.save_for_backward(*inputs)

  @staticmethod
  def backward(ctx, g):
    c, k, d = ctx.saved_tensors
    e = c + k
    return (e + d) * g, d * g, e * g


class SteQuantize(torch.autograd.Function):
  """``round(x)`` (scale 1), straight-through gradient."""

  @staticmethod
  def forward(x):
    return torch.round(x * 1.0) * 1.0

  @staticmethod
  def setup_context(ctx, inputs, output):
    del ctx, inputs, output

  @staticmethod
  def backward(ctx, g):
    return g


class SteSign(_SavesInput):
  """``sign(x)``, gradient ``g`` where ``|x| <= 1`` (larq's ``ste_sign``)."""

  @staticmethod
  def forward(x):
    return torch.sign(x)

  @staticmethod
  def backward(ctx, g):
    (x,) = ctx.saved_tensors
    return g * (torch.abs(x) <= 1).to(g.dtype)


class CenterLoss(torch.autograd.Function):
  """``1/2 sum ||x_i - c[y_i]||^2``; ``dx = g (x - c[y])``, ``dc`` the paper's update."""

  @staticmethod
  def forward(x, y, c):
    one_hot = torch.nn.functional.one_hot(y.long(), c.shape[0]).to(x.dtype)
    diff = x - one_hot @ c
    return 0.5 * torch.sum(diff * diff), diff, one_hot

  @staticmethod
  def setup_context(ctx, inputs, output):
    del inputs
    ctx.mark_non_differentiable(output[1], output[2])
    ctx.save_for_backward(output[1], output[2])

  @staticmethod
  def backward(ctx, g, *unused):
    del unused
    diff, one_hot = ctx.saved_tensors
    counts = torch.sum(one_hot, 0)
    delta_c = (one_hot.T @ -diff) / (1.0 + counts)[:, None]
    return g * diff, None, g * delta_c


def center_loss(x, y, c):
  return CenterLoss.apply(x, y, c)[0]


class PositiveMatmul(torch.autograd.Function):
  """``x @ relu(w)^T``; ``dx = g @ relu(w)``, ``dw = g^T x`` where ``w > 0``."""

  @staticmethod
  def forward(x, w):
    w_pos = torch.where(w > 0, w, 0.0)
    return x @ w_pos.T, w_pos

  @staticmethod
  def setup_context(ctx, inputs, output):
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(inputs[0], inputs[1], output[1])

  @staticmethod
  def backward(ctx, g, unused):
    del unused
    x, w, w_pos = ctx.saved_tensors
    return g @ w_pos, torch.where(w > 0, g.T @ x, 0.0)


def positive_matmul(x, w):
  return PositiveMatmul.apply(x, w)[0]


class BernoulliMask(torch.autograd.Function):
  """``(u < p) * features``; ``dp = g * features`` summed over the channel axis,
  ``dfeatures = g * m``."""

  @staticmethod
  def forward(p, features, u):
    return torch.where(u < p, features, 0.0)

  @staticmethod
  def setup_context(ctx, inputs, output):
    del output
    p, features, u = inputs
    ctx.save_for_backward(p, features, u)

  @staticmethod
  def backward(ctx, g):
    p, features, u = ctx.saved_tensors
    return (torch.sum(g * features, 1, keepdim=True), torch.where(u < p, g, 0.0), None)


BASELINES = {
    "bernoulli_mask": BernoulliMask.apply, "center_loss": center_loss,
    "custom_add": CustomAdd.apply, "leaky_relu": LeakyRelu.apply,
    "positive_matmul": positive_matmul, "ste_quantize": SteQuantize.apply,
    "ste_sign": SteSign.apply,
}
