"""`leaky_relu` (the layer-gradient Q&A, example 1): ``x`` where positive, ``alpha * x``
elsewhere."""

import numpy as np

from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.op_registry import register
from crossgrad.registry.opdef import OpDef


def _forward(xp, x, *, alpha=0.2):
  return xp.where(x > 0, x, alpha * x), (x,)


def _backward(xp, residuals, g, *, alpha=0.2):
  (x,) = residuals
  return (xp.where(x > 0, g, alpha * g),)


def _check_inputs(specs, *, alpha):
  del specs
  if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
    raise CrossgradError("alpha must be a real number", argument="parameter 'alpha'",
                         expected="float", actual=type(alpha).__name__)


def _sample(rng):
  z = rng.standard_normal((5, 7))
  return (z + 0.05 * np.sign(z),)  # Keep finite differences off the kink at 0.


LEAKY_RELU = register(OpDef(
    name="leaky_relu",
    forward=_forward,
    backward=_backward,
    gradient="exact",
    sample=_sample,
    param_sets=({}, {"alpha": 0.01}),
    check_inputs=_check_inputs,
    edge_samples=lambda *, alpha=0.2: (0.0,),  # The kink, and the subnormals beside it.
    special_differences={"daz": "a positive subnormal x is not > 0 there, so it takes the "
                                "alpha branch: output alpha * x flushed to 0, gradient "
                                "alpha * g instead of g"},
    doc="where(x > 0, x, alpha * x), exact gradient (alpha=0.2 by default)",
))
