"""`CenterLoss`: a `torch.nn.Module` holding the class centers, trained by the paper's rule."""

from __future__ import annotations

import torch

import crossgrad.api.torch as cg_torch

_CENTER_LOSS = cg_torch.get("center_loss")


class CenterLoss(torch.nn.Module):
  """``weight * center_loss(features, labels, centers)`` with trainable centers (K, d).

  The centers start at zero and are an ordinary `torch.nn.Parameter`: their gradient is
  ``weight * delta c`` (the paper's update), so plain SGD with learning rate
  ``alpha / weight`` on them applies ``c_j <- c_j - alpha * delta c_j``. The torch form of
  `crossgrad.layers.keras_center_loss.CenterLoss`.
  """

  def __init__(self, num_classes: int, dim: int, weight: float = 1.0,
               dtype: torch.dtype = torch.float32):
    super().__init__()
    self.weight = float(weight)
    self.centers = torch.nn.Parameter(torch.zeros(int(num_classes), int(dim), dtype=dtype))

  def forward(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return self.weight * _CENTER_LOSS(features, labels, self.centers)

  def extra_repr(self) -> str:
    return f"num_classes={self.centers.shape[0]}, dim={self.centers.shape[1]}, " \
           f"weight={self.weight}"
