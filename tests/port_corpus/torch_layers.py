"""Custom autograd Functions as a PyTorch model might hold them (test corpus for
crossgrad-port: each construct of torch.autograd.Function the port carries)."""

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd import Function

EPS = 1e-6


def _rms(x, eps):
  return torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


class ScaledTanh(Function):
  """tanh(scale * x): the output saved, ctx.scale a Python value, a None gradient for it."""

  @staticmethod
  def forward(ctx, x, scale=1.0):
    y = torch.tanh(x * scale)
    ctx.save_for_backward(y)
    ctx.scale = scale
    return y

  @staticmethod
  def backward(ctx, grad_output):
    (y,) = ctx.saved_tensors
    grad_x = None
    if ctx.needs_input_grad[0]:
      grad_x = grad_output * ctx.scale * (1 - y * y)
    return grad_x, None


class RMSNorm(Function):
  """x / rms(x) * weight over the last axis; a helper, a module constant, keepdim sums."""

  @staticmethod
  def forward(ctx, x, weight):
    inv = _rms(x, EPS)
    ctx.save_for_backward(x, weight, inv)
    return x * inv * weight

  @staticmethod
  def backward(ctx, grad_out):
    x, weight, inv = ctx.saved_tensors
    n = x.shape[-1]
    gw = grad_out * weight
    grad_x = inv * gw - x * inv.pow(3) * (gw * x).sum(dim=-1, keepdim=True) / n
    grad_w = (grad_out * x * inv).reshape(-1, n).sum(0)
    return grad_x, grad_w


class SoftmaxCrossEntropy(Function):
  """Per-row cross entropy of logits against soft labels: labels get no gradient."""

  @staticmethod
  def forward(ctx, logits, labels):
    log_p = F.log_softmax(logits, dim=-1)
    ctx.save_for_backward(log_p, labels)
    return -(labels * log_p).sum(-1)

  @staticmethod
  def backward(ctx, g):
    log_p, labels = ctx.saved_tensors
    return (log_p.exp() - labels) * g.unsqueeze(-1), None


class TopOne(Function):
  """Several outputs: the row maximum and its index (marked non-differentiable)."""

  @staticmethod
  def forward(ctx, x):
    values, index = x.max(dim=1)
    ctx.mark_non_differentiable(index)
    ctx.save_for_backward(x, values)
    return values, index

  @staticmethod
  def backward(ctx, g_values, g_index):
    x, values = ctx.saved_tensors
    mask = (x == values.unsqueeze(1)).to(x.dtype)
    return mask * g_values.view(-1, 1)


class GatedLinear(Function):
  """setup_context style (torch.func-ready): x @ w gated by sigmoid, two outputs."""

  generate_vmap_rule = True

  @staticmethod
  def forward(x, w, gate_bias):
    h = x @ w
    s = torch.sigmoid(h + gate_bias)
    return h * s, s

  @staticmethod
  def setup_context(ctx, inputs, output):
    x, w, gate_bias = inputs
    _, s = output
    ctx.save_for_backward(x, w, s)
    ctx.gate_bias = gate_bias

  @staticmethod
  def backward(ctx, g_out, g_s):
    x, w, s = ctx.saved_tensors
    h = x @ w
    dh = g_out * (s + h * s * (1 - s)) + g_s * s * (1 - s)
    return dh @ w.t(), x.t() @ dh, None


class SmoothClip(Function):
  """Python control flow on a parameter and on shapes kept; a clone written in place."""

  @staticmethod
  def forward(ctx, x, limit, mode="soft"):
    ctx.mode = mode
    ctx.limit = limit
    ctx.save_for_backward(x)
    if mode == "soft":
      return limit * torch.tanh(x / limit)
    return torch.clamp(x, -limit, limit)

  @staticmethod
  def backward(ctx, grad):
    (x,) = ctx.saved_tensors
    if ctx.mode == "soft":
      t = torch.tanh(x / ctx.limit)
      grad_in = grad * (1.0 - t ** 2)
    else:
      grad_in = grad.clone()
      grad_in[x.abs() > ctx.limit] = 0
    if x.dim() > 1:
      grad_in = grad_in.contiguous()
    return grad_in, None, None


class Affine(Function):
  """x @ weight (+ bias): an optional input tested with `is not None`, gradients computed
  only where needed, an output updated in place."""

  @staticmethod
  def forward(ctx, x, weight, bias=None):
    ctx.save_for_backward(x, weight, bias)
    out = x @ weight
    if bias is not None:
      out += bias
    return out

  @staticmethod
  def backward(ctx, g):
    x, weight, bias = ctx.saved_tensors
    gx = gw = gb = None
    if ctx.needs_input_grad[0]:
      gx = g @ weight.T
    if ctx.needs_input_grad[1]:
      gw = x.transpose(0, 1) @ g
    if bias is not None and ctx.needs_input_grad[2]:
      gb = g.sum(0)
    return gx, gw, gb


SAMPLES = {
    "ScaledTanh": lambda rng: (rng.standard_normal((3, 4)), 0.7),
    "RMSNorm": lambda rng: (rng.standard_normal((2, 3, 5)), rng.uniform(0.5, 1.5, 5)),
    "SoftmaxCrossEntropy": lambda rng: (rng.standard_normal((4, 3)),
                                        rng.dirichlet(np.ones(3), 4)),
    "TopOne": lambda rng: (rng.standard_normal((3, 5)),),
    "GatedLinear": lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal((4, 2)),
                                0.5),
    "SmoothClip": lambda rng: (rng.standard_normal((3, 4)) * 2, 1.5, "soft"),
    "Affine": lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal((4, 2)),
                           rng.standard_normal(2)),
}
GRADIENTS = {name: "exact" for name in SAMPLES}
del math
