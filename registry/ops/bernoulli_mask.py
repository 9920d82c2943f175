"""`bernoulli_mask` (arXiv 1710.11446, as the "Override Tensorflow Backward-Propagation"
post and Shigapova's course write it): a Bernoulli sample of an
attention map multiplied with a feature map, with their surrogate gradient.

Forward ``m = (u < p)`` (``u`` uniform noise in [0, 1) of ``p``'s shape, so
``P(m = 1) = p``), output ``m * features``; ``p`` and ``features`` broadcast (an
attention map ``(N, H, W, 1)`` against features ``(N, H, W, C)``). Backward
``dp = g * features`` summed over the axes where ``p`` was broadcast, ``dfeatures =
g * m`` (summed likewise where ``features`` was); ``u`` gets none.

The mask selects: a dropped element is exactly 0 and passes exactly 0 back, whatever its
feature or cotangent (inf and NaN included), as a mask user expects. Both products with
``m`` are written as ``xp.where``, not as a multiplication by ``m`` cast to floats, whose
``0 * inf = nan`` XLA's simplifier turns into a select anyway (so frameworks would differ).
``dp`` is a real product summed over channels: where ``g * features`` overflows, its sum is
NaN or +-inf by summation order (and fused multiply-adds) - declared ``overflow_order``.

``dp`` is the derivative of the expectation ``E[m * features] = p * features`` with
respect to ``p`` (the declared ``surrogate``), while ``dfeatures`` is the exact
derivative of the forward (``m``, not ``p``: ``exact_inputs``). No single function has
both as its derivative (its mixed partials would be 1 and 0), so the cross-check
verifies each half by finite differences of its own function.

Probabilities outside [0, 1] or NaN are a `CrossgradError` where values are known
(`check_values`, called by the eager entry points); under tracing the mask saturates:
``p >= 1`` keeps every element, ``p <= 0`` and NaN drop every one.
"""

from __future__ import annotations

import numpy as np

from crossgrad.registry import broadcasting, validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.op_registry import register
from crossgrad.registry.opdef import OpDef

NAME = "bernoulli_mask"


def _forward(xp, p, features, u):
  keep = xp.less(u, p)
  return xp.where(keep, features, 0.0), (p, features, keep)


def _backward(xp, residuals, g):
  p, features, keep = residuals
  return (xp.unbroadcast(g * features, p),
          xp.unbroadcast(xp.where(keep, g, 0.0), features), None)


def _check_inputs(specs):
  p, features, u = specs["p"], specs["features"], specs["u"]
  for name in ("features", "u"):
    if specs[name].dtype != p.dtype:
      raise CrossgradError("input must have the dtype of input 'p'", argument=f"input '{name}'",
                           expected=p.dtype, actual=specs[name].dtype)
  if not validation.shapes_compatible(u.shape, p.shape):
    raise CrossgradError("noise must have the shape of input 'p'", argument="input 'u'",
                         expected=str(p), actual=str(u))
  if (p.shape is not None and features.shape is not None
      and broadcasting.broadcast_shape(p.shape, features.shape) is None):
    raise CrossgradError("p and features do not broadcast", argument="input 'features'",
                         expected=f"a shape broadcasting with p's {str(p)}",
                         actual=str(features))


def check_values(p, u=None, *, backend: str | None = None):
  """Raises `CrossgradError` unless ``p`` lies in [0, 1] and ``u`` (if given) in [0, 1).

  For arrays of any backend or NumPy; one whose values are traced is not checked. NaN
  counts as out of range. Each array's range comes first (`validation.concrete_bounds`, one
  reduction in its framework); its values are read only to name a bad one.
  """
  for name, x, upper, closed in (("p", p, 1.0, True), ("u", u, 1.0, False)):
    bounds = None if x is None else validation.concrete_bounds(x)
    if bounds is None or (0 <= bounds[0] and (bounds[1] <= upper if closed
                                              else bounds[1] < upper)):
      continue  # A NaN bound compares False: it goes on to name the bad value.
    values = np.asarray(validation.concrete_values(x), np.float64)
    inside = (values >= 0) & ((values <= upper) if closed else (values < upper))
    if not inside.all():
      index = tuple(int(i) for i in np.argwhere(~inside)[0])
      raise CrossgradError(
          "values out of range" if name == "p" else "noise out of range", op=NAME,
          backend=backend, argument=f"input '{name}'",
          expected="probabilities in [0, 1]" if name == "p" else "uniform noise in [0, 1)",
          actual=f"{values[index]} at index {index}" + (
              f" ({int(np.size(values) - inside.sum())} bad values)"))


def _sample(rng):
  p = rng.uniform(0.05, 0.95, (2, 3, 4, 1))
  features = rng.standard_normal((2, 3, 4, 5))
  u = rng.uniform(0.0, 1.0, p.shape)
  near = np.abs(u - p) < 0.05  # Keep finite differences in p off the mask's jumps.
  u[near] = (p[near] + 0.5) % 1.0
  return p, features, u


BERNOULLI_MASK = register(OpDef(
    name=NAME,
    forward=_forward,
    backward=_backward,
    gradient="surrogate",
    surrogate=lambda xp, p, features, u: p * features,
    sample=_sample,
    nondiff=("u",),
    exact_inputs=("features",),
    check_inputs=_check_inputs,
    edge_samples=lambda: (0.0, 1.0),  # Where the mask saturates; u == p ties come aligned.
    special_differences={"overflow_order": "dp sums g * features over the channels; where "
                                           "products overflow, the sum is NaN or +-inf by "
                                           "order and fused multiply-adds"},
    doc="(u < p) * features for noise u, surrogate gradient dp = g * features "
        "(summed where p broadcasts), dfeatures = g * (u < p)",
))
