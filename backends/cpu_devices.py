"""Splits the host CPU into several logical devices for TensorFlow and JAX (and names
it ``cpu:0`` ... ``cpu:n-1`` in PyTorch, which has one CPU device).

Machines without accelerators still exercise multi-device code this way (sharding,
`shard_map`, `tf.distribute.MirroredStrategy`, the cross-check's device rows). Both
frameworks fix their device list when they first run something, so `configure` must come
before any other TensorFlow or JAX work in the process; it is an explicit, process-wide
choice of the caller, never made by crossgrad on its own. GPUs and TPUs are untouched.
"""

from __future__ import annotations

from typing import Sequence

from crossgrad.backends import base
from crossgrad.registry.errors import CrossgradError

_HINT = ("Call crossgrad.backends.cpu_devices.configure(n) first thing in the process "
         "(or set XLA_FLAGS=--xla_force_host_platform_device_count=n for JAX).")


def _configure_jax(count: int) -> None:
  import jax  # pylint: disable=g-import-not-at-top
  try:
    jax.config.update("jax_num_cpu_devices", count)
  except RuntimeError:  # Already initialised: fine only if it has the count wanted.
    found = len(jax.devices("cpu"))
    if found != count:
      raise CrossgradError("JAX already started with another CPU device count",
                           backend="jax", argument="count", expected=str(count),
                           actual=str(found), hint=_HINT) from None


def _configure_tensorflow(count: int) -> None:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cpu = tf.config.list_physical_devices("CPU")[0]
  try:
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
  except RuntimeError:  # Already initialised: fine only if it has the count wanted.
    found = len(tf.config.list_logical_devices("CPU"))
    if found != count:
      raise CrossgradError("TensorFlow already started with another CPU device count",
                           backend="tensorflow", argument="count", expected=str(count),
                           actual=str(found), hint=_HINT) from None


def _configure_torch(count: int) -> None:
  base.load("torch").set_cpu_device_count(count)  # Names only: torch has one CPU device.


_CONFIGURE = {"jax": _configure_jax, "tensorflow": _configure_tensorflow,
              "torch": _configure_torch}


def configure(count: int, backends: Sequence[str] = ("tensorflow", "jax")) -> None:
  """Gives each named framework ``count`` logical CPU devices (``cpu:0`` ... ``cpu:n-1``).

  Raises `CrossgradError` if a framework already started with a different count.
  """
  if not isinstance(count, int) or isinstance(count, bool) or count < 1:
    raise CrossgradError("the CPU device count must be a positive integer",
                         argument="count", expected=">= 1", actual=repr(count))
  for name in backends:
    base.load(name)  # A clear error if the framework is missing or unknown.
    if name in _CONFIGURE:
      _CONFIGURE[name](count)
