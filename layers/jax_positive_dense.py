"""A dense layer with non-negative effective weights, in JAX (``positive_matmul``).

    params = jax_positive_dense.init(key, n_in=8, units=3)
    y = jax_positive_dense.apply(params, x)  # x @ relu(params["kernel"]).T + bias
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

import crossgrad as cg


def init(key, n_in: int, units: int, use_bias: bool = True, dtype="float32") -> dict:
  """Kernel (units, n_in) uniform in ``[0, sqrt(6 / (n_in + units))]``, zero bias."""
  limit = math.sqrt(6.0 / (n_in + units))
  params = {"kernel": jax.random.uniform(key, (units, n_in), dtype, 0.0, limit)}
  if use_bias:
    params["bias"] = jnp.zeros((units,), dtype)
  return params


def apply(params: dict, x):
  y = cg.jax.get("positive_matmul")(x, params["kernel"])
  return y + params["bias"] if "bias" in params else y


def effective_kernel(params: dict):
  """``relu(kernel)``: the weights the layer actually applies (all >= 0)."""
  return jax.nn.relu(params["kernel"])
