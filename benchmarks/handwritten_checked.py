"""The hand-written baselines making, by hand, the checks crossgrad's ops make on a call:
the second baseline of `overhead`.

A crossgrad op checks a call's inputs (their number; the differentiable ones floating), runs
the op's own value checks where the values are known (center_loss: labels in [0, number of
centers); nothing is read under tracing or compilation), and gives the standard's results
where a framework differs (sign(NaN) is NaN; torch's sign gives 0). `checked` wraps a
`handwritten` (or `handwritten_torch`) op with those checks written directly in its
framework, as a user who wanted them would write them.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import tensorflow as tf
import torch

from crossgrad.benchmarks import handwritten_torch


def _floating(framework: str, x) -> bool:
  if framework == "tf":
    return x.dtype.is_floating
  if framework == "jax":
    return jnp.issubdtype(x.dtype, jnp.floating)
  return x.is_floating_point()


def _concrete(framework: str, x) -> bool:
  """Whether ``x``'s values can be read now (not traced, not compiling)."""
  if framework == "tf":
    return tf.executing_eagerly()
  if framework == "jax":
    return not isinstance(x, jax.core.Tracer)
  return not torch.compiler.is_compiling()


def _labels_in_range(framework: str, x, y, c) -> None:
  """center_loss's value check: every label indexes a row of the centers."""
  del x
  if _concrete(framework, y):
    low, high = (float(f(y)) for f in {"tf": (tf.reduce_min, tf.reduce_max),
                                       "jax": (jnp.min, jnp.max),
                                       "torch": (torch.min, torch.max)}[framework])
    if low < 0 or high >= c.shape[0]:
      raise ValueError(f"center_loss: labels must lie in [0, {c.shape[0]})")


VALUE_CHECKS = {"center_loss": _labels_in_range}


class _SteSignNaN(handwritten_torch.SteSign):
  """torch's ste_sign with the standard's sign(NaN) = NaN."""

  @staticmethod
  def forward(x):
    return torch.where(torch.isnan(x), x, torch.sign(x))


# Ops whose torch version needs a different formula to give the standard's results.
TORCH_STANDARD = {"ste_sign": _SteSignNaN.apply}


def checked(name: str, framework: str, fn: Callable[..., Any], n_inputs: int,
            diff: Sequence[int]) -> Callable[..., Any]:
  """``fn`` (op ``name`` hand-written in ``framework``: "tf", "jax" or "torch", taking
  ``n_inputs`` inputs, ``diff`` the differentiable ones) with crossgrad's checks."""
  if framework == "torch":
    fn = TORCH_STANDARD.get(name, fn)
  values = VALUE_CHECKS.get(name)

  def call(*inputs):
    if len(inputs) != n_inputs:
      raise TypeError(f"{name} takes {n_inputs} inputs, got {len(inputs)}")
    for i in diff:
      if not _floating(framework, inputs[i]):
        raise TypeError(f"{name}: input {i} must be floating, got {inputs[i].dtype}")
    if values is not None:
      values(framework, *inputs)
    return fn(*inputs)

  return call

