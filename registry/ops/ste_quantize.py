"""`ste_quantize` (the layer-gradient Q&A, example 3): round in the forward,
straight-through backward.

``q = round(x / scale) * scale``, rounding half to even exactly like ``numpy.round``
(never the ``x + stop_gradient(q - x)`` form, which is not bit-exact). With ``bits``,
the levels are clipped to the signed range ``[-2**(bits-1), 2**(bits-1) - 1]``. The
backward passes ``g`` unchanged; with ``clip=True`` only where ``x`` lies inside the
representable range ``[lo * scale, hi * scale]``. Its surrogate is the identity, or the
clipped identity, whose derivative the backward implements.
"""

from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.op_registry import register
from crossgrad.registry.opdef import OpDef


def _range(bits, scale):
  return -(2 ** (bits - 1)) * scale, (2 ** (bits - 1) - 1) * scale


def _forward(xp, x, *, scale=1.0, bits=None, clip=False):
  levels = xp.round(x * (1.0 / scale))
  if bits is not None:
    levels = xp.clip(levels, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
  return levels * scale, (x,)


def _backward(xp, residuals, g, *, scale=1.0, bits=None, clip=False):
  (x,) = residuals
  if not clip:
    return (g,)
  lo, hi = _range(bits, scale)
  inside = xp.logical_and(x >= lo, x <= hi)
  return (xp.where(inside, g, 0.0),)


def _surrogate(xp, x, *, scale=1.0, bits=None, clip=False):
  return xp.clip(x, *_range(bits, scale)) if clip else x


def _edges(*, scale=1.0, bits=None, clip=False):
  """Rounding midpoints around 0 (half to even: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2) and, with
  ``bits``, the ends of the range and the midpoints just past them."""
  del clip
  edges = [k + 0.5 for k in range(-3, 3)]
  if bits is not None:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    edges += [lo, hi, lo - 0.5, hi + 0.5]
  return tuple(e * scale for e in edges)


def _check_inputs(specs, *, scale, bits, clip):
  del specs
  if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not scale > 0:
    raise CrossgradError("scale must be a positive number", argument="parameter 'scale'",
                         expected="> 0", actual=repr(scale))
  if bits is not None and (not isinstance(bits, int) or isinstance(bits, bool) or bits < 2):
    raise CrossgradError("bits must be an integer >= 2 or None", argument="parameter 'bits'",
                         expected=">= 2", actual=repr(bits))
  if clip and bits is None:
    raise CrossgradError("clip=True needs a range", argument="parameter 'clip'",
                         expected="bits=<int> alongside clip=True", actual="bits=None")


def _sample(rng):
  return (rng.standard_normal((8, 10)) * 2.0,)  # Room for every special value, twice.


STE_QUANTIZE = register(OpDef(
    name="ste_quantize",
    forward=_forward,
    backward=_backward,
    gradient="surrogate",
    surrogate=_surrogate,
    sample=_sample,
    param_sets=({}, {"bits": 4, "scale": 0.25}, {"bits": 4, "scale": 0.25, "clip": True}),
    check_inputs=_check_inputs,
    edge_samples=_edges,
    doc="round(x / scale) * scale (optionally to `bits` signed levels), straight-through "
        "gradient (zero outside the range with clip=True)",
))
