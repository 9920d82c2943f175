"""The cross-check's ``keras`` rows: each op through `crossgrad.keras` under each Keras
backend, compared with the NumPy reference like any backend (``--backends=keras``).

Keras fixes its backend per process, so this backend keeps one worker process per Keras
backend (`crossgrad.api.keras_worker`, started on first use) and its modes are the Keras
backends: a row ``keras / jax`` ran the op as a Keras operation under ``KERAS_BACKEND=jax``,
its cotangents from `jax.vjp`. Eager calls only, on the CPU.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import os
import pickle
import subprocess
import sys
from typing import Any, Sequence

from crossgrad.backends.common import base
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

NAME = "keras"
MODES = ("tensorflow", "jax", "torch")


class KerasRows:
  """A crossgrad backend (`crossgrad.backends.common.protocol`) whose modes are Keras backends."""

  NAME = NAME
  MODES = MODES
  # Its workers find ops by registered name: an op made in this process (the custom_rule
  # rows' sentinel) is not there.
  RUNS_REGISTERED_OPS_ONLY = True

  def __init__(self, modules: Sequence[str] = ()):
    self.VERSION = importlib.metadata.version("keras")  # pylint: disable=invalid-name
    self.xp = base.load("numpy").xp
    self._modules = list(modules)
    self._workers: dict[str, subprocess.Popen] = {}
    atexit.register(self.close)

  def get(self, op: str | OpDef, /, **params: Any):
    raise NotImplementedError("keras rows run in worker processes; use crossgrad.keras.get")

  def spec_of(self, x: Any):
    return base.load("numpy").spec_of(x)

  def devices(self) -> list[str]:
    return ["cpu:0"]

  def precision_scope(self, arrays, float32=None):
    """The workers keep NumPy's dtypes (JAX's runs with x64) and run on the CPU, where
    float32 matmuls are full float32."""
    del arrays, float32
    return contextlib.nullcontext()

  def register_container(self, cls, flatten, unflatten):
    del cls, flatten, unflatten  # Inputs reach the workers as NumPy arrays.

  def _worker(self, backend: str) -> subprocess.Popen:
    if backend not in self._workers:
      env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2",
             "CROSSGRAD_MODULES": os.pathsep.join(self._modules)}
      self._workers[backend] = subprocess.Popen(
          [sys.executable, "-m", "crossgrad.api.keras_worker"], env=env, stdin=subprocess.PIPE,
          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return self._workers[backend]

  def evaluate(self, op: OpDef, params: dict, inputs, cotangent, *, device: str, mode: str):
    base.check_mode(NAME, mode, MODES)
    if device != "cpu:0":
      raise CrossgradError("unknown device", op=op.name, backend=NAME, argument="device",
                           expected="cpu:0", actual=repr(device))
    worker = self._worker(mode)
    try:
      pickle.dump((op.name, dict(params), list(inputs), list(cotangent)), worker.stdin)
      worker.stdin.flush()
      reply = pickle.load(worker.stdout)
    except (BrokenPipeError, EOFError):
      self._workers.pop(mode, None)
      raise CrossgradError("the Keras worker process died", op=op.name, backend=NAME,
                           argument=f"KERAS_BACKEND={mode}") from None
    if reply[0] != "ok":
      raise CrossgradError(f"failed under Keras: {reply[1]}", op=op.name, backend=NAME,
                           argument=f"KERAS_BACKEND={mode}")
    return reply[1], reply[2]

  def close(self):
    for worker in self._workers.values():
      worker.stdin.close()
      worker.wait(timeout=60)
    self._workers.clear()


def register(modules: Sequence[str] = ()) -> KerasRows:
  """Registers the ``keras`` backend (once); ``modules`` register user ops in the workers."""
  backend = KerasRows(modules)
  base.unregister(NAME)
  return base.register(backend)
