"""Round trips between frameworks: export modes of one backend that run another backend's op.

``jax2tf``: the JAX op converted to TensorFlow (`jax2tf.convert(with_gradient=True)`) runs in
the TensorFlow backend, eagerly, differentiated by TF. Backends never load each other; the
checker, which loads every backend, connects them as it loads the receiving one, and the
sending one is loaded only when the mode runs.
"""

from __future__ import annotations

from typing import Any

from crossgrad.backends import base


def _jax_to_tensorflow(op, params):
  base.load("jax")  # A clear error if JAX is missing.
  from crossgrad.backends import jax_export  # pylint: disable=g-import-not-at-top
  return jax_export.to_tensorflow(base.load("jax").get(op, **params))


def _jax_precision(arrays):
  """JAX's 64-bit scope where the arrays need it (jax2tf converts at call time)."""
  return base.load("jax").precision_scope(arrays)


# mode -> (the backend whose op it runs, the backend that runs it, the op's function there,
# the scope it runs in, why the receiver's forward mode does not apply to it).
ROUND_TRIPS = {
    "jax2tf": ("jax", "tensorflow", _jax_to_tensorflow, _jax_precision,
               "jax2tf.convert(with_gradient=True) attaches the JAX op's VJP with "
               "tf.custom_gradient; TF's forward mode differentiates the converted forward"),
}


def connect(name: str, module: Any) -> None:
  """Adds to backend ``name`` (loaded as ``module``) the round trips it runs."""
  for mode, (_, receiver, function, scope, no_forward_mode) in ROUND_TRIPS.items():
    if receiver == name and mode not in module.EXTRA_MODES:
      module.add_round_trip(mode, function, scope, no_forward_mode)


def narrows_integers(module: Any, mode: str) -> bool:
  """Whether ``module``'s results in ``mode`` may hold 32-bit integers for 64-bit ones: its
  ``NARROWED_INTEGERS`` (JAX without x64), or in a round trip the sending backend's (jax2tf
  runs JAX's op)."""
  trip = ROUND_TRIPS.get(mode)
  sender = base.load(trip[0]) if trip is not None and trip[1] == module.NAME else module
  return getattr(sender, "NARROWED_INTEGERS", False)
