"""Shared fixtures: run an op's forward and VJP through a backend's public API."""

import os

import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Tests start JAX in subprocesses too: on a GPU each would otherwise take 75% of its memory.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
if shutil.which("nvidia-smi") is None:  # No GPU: Triton kernels run in its interpreter,
  os.environ.setdefault("TRITON_INTERPRET", "1")  # read before triton is imported.

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
import pytest  # pylint: disable=g-import-not-at-top,wrong-import-position

# Before any test imports TensorFlow or JAX: Triton (where installed) loads just before them.
import crossgrad as cg  # pylint: disable=g-import-not-at-top,wrong-import-position
from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top,wrong-import-position


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


@pytest.fixture(scope="session", autouse=True)
def _compile_caches_of_this_session(tmp_path_factory):
  """Every compile cache a test or its subprocesses write (``python -m crossgrad.check``
  defaults to ``~/.cache/crossgrad``; Inductor to ``/tmp/torchinductor_$USER``) lives in
  this session's (with pytest-xdist: this worker's) temporary folder: no test reads
  programs an earlier run or a parallel worker compiled, and none writes into $HOME.
  Inductor's folder is the one the check binary gives torch (``<dir>/torch``), so the
  first compilation's one-off work (Inductor's shared C++ code) is done once per worker,
  not once in this process and again in the check's subprocesses."""
  folder = tmp_path_factory.mktemp("compile_caches")
  with pytest.MonkeyPatch.context() as patch:
    patch.setenv("CROSSGRAD_CACHE_DIR", str(folder / "crossgrad"))
    patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(folder / "crossgrad" / "torch"))
    yield


@pytest.fixture(autouse=True)
def _registries_left_as_found():
  """A test that registers an op or a backend removes it again (a fixture's ops are
  removed by that fixture): which tests share a process (pytest-xdist's workers, -k)
  must never change what another test sees."""
  ops, backends = cg.names(), base.names()
  yield
  assert (cg.names(), base.names()) == (ops, backends), "a test left a registration behind"
