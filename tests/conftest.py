"""Shared fixtures: run an op's forward and VJP through a backend's public API."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
import pytest  # pylint: disable=g-import-not-at-top,wrong-import-position

import crossgrad as cg  # pylint: disable=g-import-not-at-top,wrong-import-position
from crossgrad.backends import base  # pylint: disable=g-import-not-at-top,wrong-import-position


def _vjp_through(backend: str):
  """``vjp(op, inputs, g, **params) -> (output, input cotangents)`` via the backend's own
  `evaluate` (eager), the same path the cross-check takes."""
  def vjp(op, inputs, g, **params):
    module = base.load(backend)
    opdef = cg.get(op) if isinstance(op, str) else op
    resolved = opdef.resolve_params(params, backend)
    cotangent = list(g) if isinstance(g, tuple) else [g]
    outputs, cotangents = module.evaluate(opdef, resolved, [np.asarray(x) for x in inputs],
                                          cotangent, device="cpu:0", mode="eager")
    return (outputs if len(outputs) > 1 else outputs[0]), cotangents
  return vjp


@pytest.fixture(params=["jax", "numpy", "tensorflow", "torch"])
def backend_vjp(request):
  """``vjp(op, inputs, g, **params) -> (output, input cotangents)`` in one backend."""
  return _vjp_through(request.param)
