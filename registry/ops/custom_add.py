"""`custom_add`: the seeds' gradient-override example (seeds 000 and 003), exactly.

Forward ``e = c + k``; backward ``((c + k + d) * g, d * g, (c + k) * g)``: the partials
of the seed network's ``a = d * e`` written into the add. It is a surrogate that no
smooth function has as its derivative, so only the backends are compared; the
cross-check's ``fd_forward`` row shows it is not the derivative of ``c + k``.
"""

from crossgrad.registry import validation
from crossgrad.registry.op_registry import register
from crossgrad.registry.opdef import OpDef


def _forward(xp, c, k, d):
  del xp
  return c + k, (c, k, d)


def _backward(xp, residuals, g):
  del xp
  c, k, d = residuals
  e = c + k
  return (e + d) * g, d * g, e * g


def _check_inputs(specs):
  validation.require_same_spec(specs, "c", "k", "d")


def _sample(rng):
  return tuple(rng.standard_normal((4, 3)) for _ in range(3))


CUSTOM_ADD = register(OpDef(
    name="custom_add",
    forward=_forward,
    backward=_backward,
    gradient="surrogate",
    sample=_sample,
    check_inputs=_check_inputs,
    doc="c + k with the seeds' overridden gradient ((c+k+d)g, dg, (c+k)g)",
))
