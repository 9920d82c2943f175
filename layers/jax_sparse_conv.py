"""Sparse convolution layers in JAX, on `crossgrad.SparseData` with JAX arrays.

    params = jax_sparse_conv.init(key, f=3, n_in=1, n_out=16)
    book = crossgrad.sparse.submanifold_rulebook(x, 3)   # once per active set
    y = jax_sparse_conv.submanifold(params, x, rulebook=book, activation=jax.nn.relu)
    z = jax_sparse_conv.sparse(down_params, y, stride=2)  # a downsampling step

The activation is applied to the active values and the ground state alike.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

import crossgrad as cg


def init(key, f: int, n_in: int, n_out: int, dtype="float32") -> dict:
  """He-normal kernel ``(f, f, n_in, n_out)`` and a zero bias."""
  scale = math.sqrt(2.0 / (f * f * n_in))
  return {"kernel": jax.random.normal(key, (f, f, n_in, n_out), dtype) * scale,
          "bias": jnp.zeros((n_out,), dtype)}


def _activate(y, activation):
  return y.map(activation) if activation is not None else y


def submanifold(params: dict, x: cg.SparseData, *, rulebook=None, activation=None):
  """`cg.jax.submanifold_conv2d`: output sites = input sites (odd kernel)."""
  return _activate(cg.jax.submanifold_conv2d(x, params["kernel"], params["bias"],
                                             rulebook=rulebook), activation)


def sparse(params: dict, x: cg.SparseData, *, stride: int = 1, capacity: int | None = None,
           rulebook=None, activation=None):
  """`cg.jax.sparse_conv2d` (VALID, ``stride`` apart; a downsampling step when > 1)."""
  f = int(params["kernel"].shape[0])
  return _activate(cg.jax.sparse_conv2d(x, params["kernel"], params["bias"], f, stride=stride,
                                        capacity=capacity, rulebook=rulebook), activation)
