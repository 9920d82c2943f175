"""Center loss in JAX: the centers are a plain array in your parameter pytree.

    centers = jax_center_loss.init(num_classes=10, dim=2)
    loss = cross_entropy + jax_center_loss.apply(centers, features, labels, weight=lam)

Differentiating ``apply`` gives the centers ``weight * delta c`` (the paper's update),
so an SGD step of learning rate ``alpha / weight`` on them is the paper's
``c <- c - alpha * delta c``.
"""

from __future__ import annotations

import jax.numpy as jnp

import crossgrad as cg


def init(num_classes: int, dim: int, dtype="float32"):
  """Zero centers (K, d), as the paper starts them."""
  return jnp.zeros((num_classes, dim), dtype)


def apply(centers, features, labels, weight: float = 1.0):
  """``weight * 1/2 sum_i ||features_i - centers[labels_i]||^2``."""
  return weight * cg.jax.get("center_loss")(features, labels, centers)

