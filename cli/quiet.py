"""Keeps the frameworks' start-up noise out of the binaries' output.

TensorFlow, XLA and JAX write C++ log lines (oneDNN, CUDA probing, "Unable to initialize
backend 'tpu'", absl::InitializeLog) straight to file descriptor 2, whatever the
log-level variables say once the libraries are loaded. `captured` sends descriptor 2 to
a file for the duration and gives Python's ``sys.stderr`` the real terminal, so the
binary's own progress and errors still show; the file is kept (and named) only when
asked, e.g. when a check fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import tempfile
from typing import Iterator


@dataclasses.dataclass
class Capture:
  """Where the frameworks' messages went; ``keep()`` stops the file being deleted."""

  path: str | None
  kept: bool = False

  def keep(self) -> str | None:
    self.kept = True
    return self.path


def _is_descriptor_2(stream) -> bool:
  try:
    return stream.fileno() == 2
  except (AttributeError, OSError, ValueError):
    return False


@contextlib.contextmanager
def captured(enabled: bool = True) -> Iterator[Capture]:
  """Within the block, descriptor 2 goes to a temporary file and ``sys.stderr`` to the
  terminal; with ``enabled=False`` (``--verbosity`` given), or where ``sys.stderr`` is
  not descriptor 2 (a caller capturing it, as pytest does), nothing changes."""
  if not enabled or not _is_descriptor_2(sys.stderr):
    yield Capture(None)
    return
  sys.stderr.flush()
  saved_fd = os.dup(2)
  log = tempfile.NamedTemporaryFile(prefix="crossgrad-frameworks-", suffix=".log",
                                    delete=False)
  os.dup2(log.fileno(), 2)
  saved_stream, sys.stderr = sys.stderr, os.fdopen(os.dup(saved_fd), "w", buffering=1)
  capture = Capture(log.name)
  try:
    yield capture
  finally:
    sys.stderr.flush()
    sys.stderr.close()
    sys.stderr = saved_stream
    os.dup2(saved_fd, 2)
    os.close(saved_fd)
    log.close()
    if not capture.kept:
      os.unlink(log.name)
