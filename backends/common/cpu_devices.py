"""Splits the host CPU into several logical devices for TensorFlow and JAX (and names
it ``cpu:0`` ... ``cpu:n-1`` in PyTorch, which has one CPU device).

Machines without accelerators still exercise multi-device code this way (sharding,
`shard_map`, `tf.distribute.MirroredStrategy`, the cross-check's device rows). Both
frameworks fix their device list when they first run something, so `configure` must come
before any other TensorFlow or JAX work in the process; it is an explicit, process-wide
choice of the caller, never made by crossgrad on its own. GPUs and TPUs are untouched.
Each backend does its own split (`set_cpu_device_count`, `protocol.CpuDevices`).
"""

from __future__ import annotations

from typing import Sequence

from crossgrad.backends.common import base, protocol
from crossgrad.registry.errors import CrossgradError

_HINT = ("Call crossgrad.backends.common.cpu_devices.configure(n) first thing in the process "
         "(or set XLA_FLAGS=--xla_force_host_platform_device_count=n for JAX).")


def configure(count: int, backends: Sequence[str] = ("tensorflow", "jax")) -> None:
  """Gives each named framework ``count`` logical CPU devices (``cpu:0`` ... ``cpu:n-1``).

  Raises `CrossgradError` if a framework already started with a different count.
  """
  if not isinstance(count, int) or isinstance(count, bool) or count < 1:
    raise CrossgradError("the CPU device count must be a positive integer",
                         argument="count", expected=">= 1", actual=repr(count))
  for name in backends:
    backend = base.load(name)  # A clear error if the framework is missing or unknown.
    if not isinstance(backend, protocol.CpuDevices):
      continue  # One CPU device (the NumPy reference).
    found = backend.set_cpu_device_count(count)
    if found != count:  # Fine only if it already has the count wanted.
      raise CrossgradError(f"{name} already started with another CPU device count",
                           backend=name, argument="count", expected=str(count),
                           actual=str(found), hint=_HINT)
