"""Round trips between frameworks: export modes of one backend that run another backend's op.

``jax2tf``: the JAX op converted to TensorFlow (`jax2tf.convert(with_gradient=True)`) runs in
the TensorFlow backend, eagerly, differentiated by TF. Backends never load each other; the
checker, which loads every backend, connects them as it loads the receiving one (its
`add_round_trip`, `protocol.RoundTrips`), and the sending one is loaded only when the mode
runs. What the checker may run in a backend, round trips included, is `capabilities`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from crossgrad.backends.common import base, protocol


def _jax_to_tensorflow(op, params):
  base.load("jax")  # A clear error if JAX is missing.
  from crossgrad.backends.jax import export as jax_export  # pylint: disable=g-import-not-at-top
  return jax_export.to_tensorflow(base.load("jax").get(op, **params))


def _jax_precision(arrays):
  """JAX's 64-bit scope where the arrays need it (jax2tf converts at call time)."""
  return base.load("jax").precision_scope(arrays)


@dataclasses.dataclass(frozen=True)
class RoundTrip:
  """An export mode that runs one backend's op in another."""

  sender: str  # The backend whose op it runs.
  receiver: str  # The backend that runs it.
  function: Callable[[Any, dict], Callable[..., Any]]  # (op, params) -> the op there.
  precision_scope: Callable[[Any], Any]  # The scope of its inputs.
  no_forward_mode: str  # Why the receiver's forward mode does not apply to it.


ROUND_TRIPS = {
    "jax2tf": RoundTrip("jax", "tensorflow", _jax_to_tensorflow, _jax_precision,
                        "jax2tf.convert(with_gradient=True) attaches the JAX op's VJP with "
                        "tf.custom_gradient; TF's forward mode differentiates the converted "
                        "forward"),
}


def connect(name: str, module: Any) -> None:
  """Adds to backend ``name`` (loaded as ``module``) the round trips it runs."""
  add = protocol.capabilities(module).add_round_trip
  for mode, trip in ROUND_TRIPS.items():
    if trip.receiver == name and add is not None:
      add(mode, trip.function, trip.precision_scope)


def capabilities(module: Any) -> protocol.Capabilities:
  """``module``'s optional members (`protocol.capabilities`), with the round trips it runs
  (`connect`) among its export modes, their forward mode unsupported."""
  own = protocol.capabilities(module)
  received = {mode: trip for mode, trip in ROUND_TRIPS.items()
              if trip.receiver == module.NAME and own.add_round_trip is not None}
  if not received:
    return own
  no_forward_mode = {("jvp", mode): trip.no_forward_mode for mode, trip in received.items()}
  return dataclasses.replace(
      own, EXTRA_MODES=own.EXTRA_MODES + tuple(m for m in received if m not in own.EXTRA_MODES),
      UNSUPPORTED_CHECKS={**own.UNSUPPORTED_CHECKS, **no_forward_mode})


def narrows_integers(module: Any, mode: str) -> bool:
  """Whether ``module``'s results in ``mode`` may hold 32-bit integers for 64-bit ones: its
  ``NARROWED_INTEGERS`` (JAX without x64), or in a round trip the sending backend's (jax2tf
  runs JAX's op)."""
  trip = ROUND_TRIPS.get(mode)
  sender = base.load(trip.sender) if trip is not None and trip.receiver == module.NAME else module
  return protocol.capabilities(sender).NARROWED_INTEGERS
