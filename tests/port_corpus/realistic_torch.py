"""torch.autograd.Function definitions of the kinds model code holds: quantizers,
activations with hand-written backwards, norms, losses, a linear layer (a realistic
corpus for crossgrad-port: 13 definitions, one with a real backward bug)."""

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd import Function

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


class SignSTE(Function):
  """Binarize to +-1; the backward passes the gradient where |x| <= 1 (hardtanh STE)."""

  @staticmethod
  def forward(ctx, x):
    ctx.save_for_backward(x)
    return torch.sign(x)

  @staticmethod
  def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    grad_input = grad_output.clone()
    grad_input[x.abs() > 1] = 0
    return grad_input


class FakeQuantize(Function):
  """Uniform fake quantization to num_bits with a clamp; straight-through in range."""

  @staticmethod
  def forward(ctx, x, scale, num_bits=8):
    qmax = 2 ** (num_bits - 1) - 1
    qmin = -(2 ** (num_bits - 1))
    q = torch.clamp(torch.round(x / scale), qmin, qmax)
    ctx.save_for_backward(x)
    ctx.lo = qmin * scale
    ctx.hi = qmax * scale
    return q * scale

  @staticmethod
  def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    inside = (x >= ctx.lo) & (x <= ctx.hi)
    return grad_output * inside.to(grad_output.dtype), None, None


class GradientReversal(Function):
  """Identity forward; the backward negates and scales (domain-adversarial training)."""

  @staticmethod
  def forward(ctx, x, alpha):
    ctx.alpha = alpha
    return x.view_as(x)

  @staticmethod
  def backward(ctx, grad_output):
    return grad_output.neg() * ctx.alpha, None


class MishFunction(Function):
  """x * tanh(softplus(x)) with its derivative written out."""

  @staticmethod
  def forward(ctx, x):
    ctx.save_for_backward(x)
    return x * torch.tanh(F.softplus(x))

  @staticmethod
  def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    tsp = torch.tanh(F.softplus(x))
    grad = tsp + x * torch.sigmoid(x) * (1 - tsp * tsp)
    return grad_output * grad


class SafeNorm(Function):
  """The 2-norm over the last axis with eps under the root (finite gradient at 0)."""

  @staticmethod
  def forward(ctx, x, eps=1e-12):
    norm = torch.sqrt((x * x).sum(dim=-1) + eps)
    ctx.save_for_backward(x, norm)
    return norm

  @staticmethod
  def backward(ctx, grad_norm):
    x, norm = ctx.saved_tensors
    return grad_norm.unsqueeze(-1) * x / norm.unsqueeze(-1), None


class LinearFunction(Function):
  """y = x W^T + b with saved tensors and needs_input_grad, as the torch docs write it."""

  @staticmethod
  def forward(ctx, input, weight, bias=None):
    ctx.save_for_backward(input, weight, bias)
    output = input.mm(weight.t())
    if bias is not None:
      output += bias.unsqueeze(0).expand_as(output)
    return output

  @staticmethod
  def backward(ctx, grad_output):
    input, weight, bias = ctx.saved_tensors
    grad_input = grad_weight = grad_bias = None
    if ctx.needs_input_grad[0]:
      grad_input = grad_output.mm(weight)
    if ctx.needs_input_grad[1]:
      grad_weight = grad_output.t().mm(input)
    if bias is not None and ctx.needs_input_grad[2]:
      grad_bias = grad_output.sum(0)
    return grad_input, grad_weight, grad_bias


class FusedBiasGelu(Function):
  """gelu(x + bias), tanh form, the bias broadcast over rows; one fused backward."""

  @staticmethod
  def forward(ctx, x, bias):
    ctx.save_for_backward(x, bias)
    z = x + bias
    return 0.5 * z * (1.0 + torch.tanh(_SQRT_2_OVER_PI * (z + _GELU_C * z ** 3)))

  @staticmethod
  def backward(ctx, grad_output):
    x, bias = ctx.saved_tensors
    z = x + bias
    inner = _SQRT_2_OVER_PI * (z + _GELU_C * z ** 3)
    t = torch.tanh(inner)
    d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_C * z * z)
    grad = 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * d_inner
    grad_z = grad_output * grad
    return grad_z, grad_z.sum(dim=0)


class GeluErf(Function):
  """Exact GELU, x * Phi(x) with Phi from torch.erf, and its derivative Phi + x * phi."""

  @staticmethod
  def forward(ctx, x):
    ctx.save_for_backward(x)
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))

  @staticmethod
  def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    cdf = 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
    pdf = torch.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return grad_output * (cdf + x * pdf)


class RMSNormFunction(Function):
  """x * rsqrt(mean(x^2) + eps) * weight; the inverse rms saved, eps on ctx."""

  @staticmethod
  def forward(ctx, x, weight, eps):
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    ctx.save_for_backward(x, weight, rstd)
    ctx.eps = eps
    return x * rstd * weight

  @staticmethod
  def backward(ctx, dy):
    x, weight, rstd = ctx.saved_tensors
    d = x.shape[-1]
    xhat = x * rstd
    wdy = dy * weight
    dx = rstd * (wdy - xhat * (wdy * xhat).sum(-1, keepdim=True) / d)
    dw = (dy * xhat).sum(dim=tuple(range(dy.dim() - 1)))
    return dx, dw, None


class SoftmaxCrossEntropyLoss(Function):
  """Mean cross entropy of logits against one-hot targets (no gradient for targets)."""

  @staticmethod
  def forward(ctx, logits, targets):
    shifted = logits - logits.max(dim=1, keepdim=True)[0]
    log_probs = shifted - torch.logsumexp(shifted, dim=1, keepdim=True)
    ctx.save_for_backward(log_probs, targets)
    return -(targets * log_probs).sum() / logits.shape[0]

  @staticmethod
  def backward(ctx, grad_output):
    log_probs, targets = ctx.saved_tensors
    n = log_probs.shape[0]
    grad = (torch.exp(log_probs) - targets) / n
    return grad * grad_output, None


class MaxWithIndex(Function):
  """Row maximum and its argmax (non-differentiable); the gradient goes to the winner."""

  @staticmethod
  def forward(ctx, x):
    values = x.amax(dim=-1)
    index = x.argmax(dim=-1)
    ctx.mark_non_differentiable(index)
    ctx.save_for_backward(index)
    ctx.width = x.shape[-1]
    return values, index

  @staticmethod
  def backward(ctx, grad_values, grad_index):
    (index,) = ctx.saved_tensors
    mask = F.one_hot(index, ctx.width).to(grad_values.dtype)
    return grad_values.unsqueeze(-1) * mask


class SmoothL1(Function):
  """Smooth L1 with beta, setup_context style (torch.func transforms work)."""

  @staticmethod
  def forward(input, target, beta):
    diff = input - target
    adiff = diff.abs()
    return torch.where(adiff < beta, 0.5 * diff * diff / beta, adiff - 0.5 * beta)

  @staticmethod
  def setup_context(ctx, inputs, output):
    input, target, beta = inputs
    ctx.save_for_backward(input - target)
    ctx.beta = beta

  @staticmethod
  def backward(ctx, grad_output):
    (diff,) = ctx.saved_tensors
    g = torch.where(diff.abs() < ctx.beta, diff / ctx.beta, torch.sign(diff))
    return grad_output * g, -grad_output * g, None


class StableLogSigmoid(Function):
  """log(sigmoid(x)) computed per sign; the backward's negative branch has the wrong
  sign in its exponent (a real bug: it returns sigmoid(x) there, not sigmoid(-x))."""

  @staticmethod
  def forward(ctx, x):
    ctx.save_for_backward(x)
    return torch.where(x >= 0, -torch.log1p(torch.exp(-x)), x - torch.log1p(torch.exp(x)))

  @staticmethod
  def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    pos = torch.exp(-x.clamp(min=0)) / (1 + torch.exp(-x.clamp(min=0)))
    neg = torch.exp(x.clamp(max=0)) / (1 + torch.exp(x.clamp(max=0)))
    return grad_output * torch.where(x >= 0, pos, neg)


def _floats(rng, *shape):
  return rng.standard_normal(shape).astype(np.float32)


def _one_hot(rng, rows, classes):
  return np.eye(classes, dtype=np.float32)[rng.integers(0, classes, size=rows)]


SAMPLES = {
    "SignSTE": lambda rng: (_floats(rng, 4, 5) * 2,),
    "FakeQuantize": lambda rng: (_floats(rng, 3, 6), 0.05, 4),
    "GradientReversal": lambda rng: (_floats(rng, 2, 7), 0.3),
    "MishFunction": lambda rng: (_floats(rng, 3, 4),),
    "SafeNorm": lambda rng: (_floats(rng, 5, 3),),
    "LinearFunction": lambda rng: (_floats(rng, 4, 3), _floats(rng, 2, 3), _floats(rng, 2)),
    "FusedBiasGelu": lambda rng: (_floats(rng, 4, 6), _floats(rng, 6)),
    "GeluErf": lambda rng: (_floats(rng, 3, 5) * 2,),
    "RMSNormFunction": lambda rng: (_floats(rng, 3, 8), 1 + 0.1 * _floats(rng, 8), 1e-6),
    "SoftmaxCrossEntropyLoss": lambda rng: (_floats(rng, 4, 5), _one_hot(rng, 4, 5)),
    "MaxWithIndex": lambda rng: (_floats(rng, 3, 6),),
    "SmoothL1": lambda rng: (_floats(rng, 4, 4), _floats(rng, 4, 4), 0.5),
    "StableLogSigmoid": lambda rng: (_floats(rng, 4, 5) * 3,),
}
GRADIENTS = {
    "SignSTE": "surrogate", "FakeQuantize": "surrogate", "GradientReversal": "surrogate",
    "MishFunction": "exact", "SafeNorm": "exact", "LinearFunction": "exact",
    "FusedBiasGelu": "exact", "GeluErf": "exact", "RMSNormFunction": "exact", "SoftmaxCrossEntropyLoss": "exact",
    "MaxWithIndex": "exact", "SmoothL1": "exact", "StableLogSigmoid": "exact",
}
