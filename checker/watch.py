"""``--watch``: the check stays up, frameworks loaded, and runs again when a ``--module`` file
changes (its modification time, polled), checking only the ops whose definitions changed.

A file that fails to import (a syntax error, an exception) is one message, and the watch
waits for the next change; Ctrl-C ends it with the last verdict's exit status.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any, Callable, Sequence

from crossgrad.checker import module_ops

POLL_SECONDS = 0.25
NO_VERDICT = 2  # The exit status before any check ran (the files never imported).


class Watch:
  """The watched modules, as last loaded, and every verdict so far by op key (red ones
  too: an op that did not change is not checked again while watching)."""

  def __init__(self, specs: Sequence[str]):
    self.specs = list(specs)
    self.loaded: list[module_ops.Loaded] = []
    self.memory: dict[str, Any] = {}
    self.files = [module_ops.path_of(spec) for spec in self.specs]

  def load(self) -> bool:
    """Loads the modules afresh (their old registrations removed first); False, with one
    message on stderr, where one fails to import."""
    for loaded in reversed(self.loaded):
      module_ops.unload(loaded)
    self.loaded = []
    for spec in self.specs:
      try:
        self.loaded.append(module_ops.load(spec))
      except Exception as e:  # pylint: disable=broad-except  # The user's code, any error.
        what = e.msg if isinstance(e, SyntaxError) else e
        print(f"[crossgrad] watch: {spec} did not load: {_where(e)}{type(e).__name__}: "
              f"{what}; waiting for the next change", file=sys.stderr, flush=True)
        return False
    self.files = [getattr(l.module, "__file__", None) or f
                  for l, f in zip(self.loaded, self.files)]
    return True

  def stamps(self) -> list[tuple[int, int] | None]:
    found = []
    for path in self.files:
      try:
        stat = os.stat(path)
        found.append((stat.st_mtime_ns, stat.st_size))
      except (OSError, TypeError):
        found.append(None)
    return found

  def run(self, check: Callable[[], int], runs: int | None = None,
          sleep: Callable[[float], None] = time.sleep) -> int:
    """Checks (``check``: one run, its exit status) whenever the files change, ``runs``
    times at most (None: until Ctrl-C); returns the last verdict's exit status."""
    status, done = NO_VERDICT, 0
    try:
      stamps = self.stamps()
      while True:
        if self.load():
          status = check()
          done += 1
        if runs is not None and done >= runs:
          return status
        sys.stdout.flush()  # The report, out before the watch waits (a pipe buffers it).
        print(f"[crossgrad] watch: waiting for changes to {', '.join(self.specs)} "
              "(Ctrl-C ends)", file=sys.stderr, flush=True)
        while self.stamps() == stamps:
          sleep(POLL_SECONDS)
        stamps = self._settled(sleep)
    except KeyboardInterrupt:
      return status


  def _settled(self, sleep: Callable[[float], None]) -> list:
    """The files' stamps once they stay the same for a poll: an editor that truncates a
    file and then writes it is read once, when it is whole."""
    now = self.stamps()
    while True:
      sleep(POLL_SECONDS)
      later = self.stamps()
      if later == now:
        return now
      now = later


def _where(e: Exception) -> str:
  """``file.py:LINE: `` of the user's code where ``e`` was raised (a syntax error's own)."""
  if isinstance(e, SyntaxError) and e.filename:
    return f"{e.filename}:{e.lineno}: "
  frames = traceback.extract_tb(e.__traceback__)
  user = [f for f in frames if "crossgrad" not in f.filename.split(os.sep)[-3:-1]
          and "importlib" not in f.filename]
  return f"{user[-1].filename}:{user[-1].lineno}: " if user else ""
