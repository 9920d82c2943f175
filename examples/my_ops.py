"""A user-defined op, as a user writes it: a clipped straight-through rounding.

Import this module to register ``clipped_ste``, e.g.
``python -m crossgrad.check --module=crossgrad.examples.my_ops --ops=clipped_ste``.
"""

import crossgrad as cg


def _fwd(xp, x):
  return xp.round(x), (x,)


def _bwd(xp, residuals, g):
  (x,) = residuals
  return (xp.where(xp.abs(x) <= 1.0, g, xp.zeros_like(g)),)


CLIPPED_STE = cg.register(cg.OpDef(
    name="clipped_ste",
    forward=_fwd,
    backward=_bwd,
    gradient="surrogate",
    surrogate=lambda xp, x: xp.clip(x, -1.0, 1.0),
    sample=lambda rng: (rng.standard_normal((3, 4)),),
    doc="round(x) with a straight-through gradient inside [-1, 1] (README example)",
))
