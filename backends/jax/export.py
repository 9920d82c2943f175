"""`jax.export` round trips: an op exported, serialised and loaded back, as a server would;
and `to_tensorflow`, the op converted to TensorFlow (the checker's ``jax2tf`` mode)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import jax
import numpy as np

VJP_ORDER = 2  # Derivatives serialised with the function: gradients and second order.


def round_trip(fn: Callable[..., Any], inputs: Sequence[np.ndarray],
               vjp_order: int = VJP_ORDER) -> Callable[..., Any]:
  """``fn`` exported for the shapes and dtypes of ``inputs``, serialised with ``vjp_order``
  levels of reverse-mode derivatives, and deserialised: the loaded function (`Exported.call`)."""
  specs = tuple((np.shape(x), np.asarray(x).dtype.str) for x in inputs)
  return _round_trip(fn, specs, vjp_order, jax.config.jax_enable_x64)


@functools.lru_cache(maxsize=64)
def _round_trip(fn, specs, vjp_order, x64):
  del x64  # Part of the key: the export's dtypes depend on it.
  avals = [jax.ShapeDtypeStruct(shape, np.dtype(dtype)) for shape, dtype in specs]
  exported = jax.export.export(jax.jit(fn))(*avals)
  return jax.export.deserialize(exported.serialize(vjp_order=vjp_order)).call


def to_tensorflow(fn: Callable[..., Any]) -> Callable[..., Any]:
  """``fn`` converted to TensorFlow with `jax2tf`, its VJP attached as TF's gradient."""
  from jax.experimental import jax2tf  # pylint: disable=g-import-not-at-top
  return jax2tf.convert(fn, with_gradient=True)
