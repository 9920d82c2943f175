"""What the checker drives in the NumPy reference: `evaluate` and `precision_scope`."""

from __future__ import annotations

import contextlib
from typing import Any, Sequence

import numpy as np

from crossgrad.backends.common import base
from crossgrad.backends.numpy.emitter import MODES, NAME, devices, vjp
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef


def evaluate(op: OpDef, params: dict, inputs: Sequence[np.ndarray], cotangent: Sequence[Any],
             *, device: str = "cpu:0", mode: str = "eager"):
  """Outputs (as a tuple) and input cotangents of the reference, via `vjp`."""
  base.check_mode(NAME, mode, MODES)
  if device not in devices():
    raise CrossgradError("unknown device", op=op.name, backend=NAME, argument="device",
                         expected=" or ".join(devices()), actual=repr(device))
  outputs, vjp_fn = vjp(op, *inputs, **params)
  cotangents = vjp_fn(tuple(cotangent) if isinstance(outputs, tuple) else cotangent[0])
  return validation.as_tuple(outputs), cotangents


def precision_scope(arrays: Sequence[Any], float32: str | None = None):
  """NumPy keeps every dtype as it is and computes float32 in full precision."""
  del arrays, float32
  return contextlib.nullcontext()
