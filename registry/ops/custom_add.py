"""`custom_add`: the gradient-override example of the "Override Tensorflow
Backward-Propagation" post and Shigapova's course, exactly.

Forward ``e = c + k``; backward ``((c + k + d) * g, d * g, (c + k) * g)``: the partials
of their network's ``a = d * e`` written into the add. No function has this backward
as its derivative (its mixed partials disagree: dc varies with k, dk not with c), so the
backward is its own specification: ``gradient="declared"``. There is no oracle; the
backends are compared with each other and the reference, and the cross-check's
``declared`` row shows how far the backward is from the derivative of ``c + k``.
"""

from crossgrad.registry import validation
from crossgrad.registry.op_registry import register
from crossgrad.registry.opdef import OpDef


def _forward(xp, c, k, d):
  del xp
  e = c + k
  return e, (e, d)


def _backward(xp, residuals, g):
  del xp
  e, d = residuals
  return (e + d) * g, d * g, e * g


def _check_inputs(specs):
  validation.require_same_spec(specs, "c", "k", "d")


def _sample(rng):
  return tuple(rng.standard_normal((4, 3)) for _ in range(3))


CUSTOM_ADD = register(OpDef(
    name="custom_add",
    forward=_forward,
    backward=_backward,
    gradient="declared",
    sample=_sample,
    check_inputs=_check_inputs,
    doc="c + k with the gradient the 'Override Tensorflow Backward-Propagation' post "
        "overrides it with: ((c+k+d)g, dg, (c+k)g)",
))
