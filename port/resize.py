"""The second sample a port is proved at: the source's own ``SAMPLES`` entry drawn again
from a generator whose draws come out with their axes resized.

`Resizing` wraps the checker's NumPy generator: every draw (``standard_normal((3, 4))``,
``integers(0, 5, size=4)``, ``uniform(size=(2, 3))``) gets each axis of size ``s > 1``
grown to ``s + 1`` (``axes="all"``; the same size always maps to the same new size, so
arrays that share an axis still share it), or only its first axis (``axes="leading"``,
for samples whose other sizes are written as literals, like ``np.eye(5)[...]``). Sizes 0
and 1 stay (broadcast axes). The port's generated code is not touched: the same code is
checked at both samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Where each Generator method takes its shape positionally (else as ``size=``/``shape=``).
_SIZE_POSITION = {
    "standard_normal": 0, "random": 0, "standard_exponential": 0, "standard_cauchy": 0,
    "standard_t": 1, "normal": 2, "uniform": 2, "integers": 2, "exponential": 1,
    "poisson": 1, "laplace": 2, "logistic": 2, "lognormal": 2, "gamma": 2, "beta": 2,
    "binomial": 2, "chisquare": 1, "choice": 1, "standard_gamma": 1, "gumbel": 2,
    "rayleigh": 1, "geometric": 1, "weibull": 1, "pareto": 1, "power": 1,
    "vonmises": 2, "wald": 2, "triangular": 3,
}
DESCRIPTIONS = {"all": "every axis of size s > 1 of each drawn array grown to s + 1",
                "leading": "the leading axis of each drawn array grown by one"}


def _grown(shape: Any, axes: str) -> Any:
  if shape is None:
    return None
  dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
  new = tuple(int(s) + 1 if s > 1 and (axes == "all" or k == 0) else int(s)
              for k, s in enumerate(dims))
  return new[0] if isinstance(shape, (int, np.integer)) else new


class Resizing:
  """A `numpy.random.Generator` stand-in whose draws have resized axes (module doc)."""

  def __init__(self, rng: np.random.Generator, axes: str):
    self._rng, self._axes = rng, axes

  def __getattr__(self, name: str):
    method = getattr(self._rng, name)
    if name not in _SIZE_POSITION:
      return method
    position = _SIZE_POSITION[name]

    def draw(*args, **kwargs):
      args = list(args)
      for key in ("size", "shape"):
        if key in kwargs:
          kwargs[key] = _grown(kwargs[key], self._axes)
      if len(args) > position:
        args[position] = _grown(args[position], self._axes)
      return method(*args, **kwargs)
    return draw


def resized_sample(sample, axes: str):
  """``sample(rng) -> inputs`` drawn through `Resizing`: the op's second sample."""
  return lambda rng: sample(Resizing(rng, axes))
