"""Runs a script under each Keras backend: Keras fixes its backend per process, so a test
that covers all three runs its own backend's part in the test process and starts one
subprocess for each other backend (keep their work small)."""

from __future__ import annotations

import os
import subprocess
import sys

BACKENDS = ("tensorflow", "jax", "torch")


def run(backend: str, argv: list[str], timeout: int = 600) -> str:
  """``python *argv`` with ``KERAS_BACKEND=backend``; its stdout, or an AssertionError
  carrying its stderr's tail when it fails."""
  env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
  done = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True,
                        timeout=timeout, check=False)
  if done.returncode:
    raise AssertionError(f"KERAS_BACKEND={backend} python {' '.join(argv)} failed:\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-6000:]}")
  return done.stdout
