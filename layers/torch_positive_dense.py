"""`PositiveDense`: a `torch.nn.Module` computing ``x @ relu(kernel)^T (+ bias)``."""

from __future__ import annotations

import math

import torch

import crossgrad.api.torch as cg_torch

_POSITIVE_MATMUL = cg_torch.get("positive_matmul")


class PositiveDense(torch.nn.Module):
  """Dense layer with non-negative effective weights (crossgrad's ``positive_matmul``).

  The kernel is (units, n_in), as in the layer-gradient Q&A and `torch.nn.Linear`. Its
  gradient passes only where it is positive, so an entry an update takes to zero or below
  stops learning. It starts uniform in ``[0, sqrt(6 / (n_in + units))]`` (Glorot's range
  folded onto the non-negatives), the bias at zero: the torch form of
  `crossgrad.layers.keras_positive_dense.PositiveDense`.
  """

  def __init__(self, n_in: int, units: int, bias: bool = True,
               dtype: torch.dtype = torch.float32):
    super().__init__()
    limit = math.sqrt(6.0 / (n_in + units))
    self.kernel = torch.nn.Parameter(torch.empty(units, n_in, dtype=dtype).uniform_(0.0, limit))
    self.bias = torch.nn.Parameter(torch.zeros(units, dtype=dtype)) if bias else None

  def forward(self, x: torch.Tensor) -> torch.Tensor:
    y = _POSITIVE_MATMUL(x, self.kernel)
    return y + self.bias if self.bias is not None else y

  @property
  def effective_kernel(self) -> torch.Tensor:
    """``relu(kernel)``: the weights the layer actually applies (all >= 0)."""
    return torch.relu(self.kernel)
