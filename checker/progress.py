"""The check's progress on stderr: one live line on a terminal, one line per op in a log.

The engine says what it starts (`engine.cross_check`'s ``progress``): a line per op and
parameter set (``[3/57] leaky_relu alpha=0.2: sample``) and an indented one per backend,
device and mode (``  leaky_relu alpha=0.2 float32 jax cpu:0 jit``). On a terminal `Progress`
keeps one line, rewritten in place: units of work done of the total (`engine.work_units`),
the current step, the time since the start (redrawn every second, so a long compile still
shows time passing). In a log (no terminal) it writes each op line once, with the same
counts. ``--jobs`` feeds every job's lines, from a thread per job, to one `Progress`.
"""

from __future__ import annotations

import re
import shutil
import sys
import threading
import time
from typing import TextIO

_OP_LINE = re.compile(r"\[\d+/\d+\] (?P<op>\S+) (?P<label>.*): (?P<what>[^:]*)$")
_MAX_KEY_WORDS = 12  # A unit's key is op, params label, dtype and backend: a few words.


def is_engine_line(text: str) -> bool:
  """Whether ``text`` is one of the engine's progress lines (not a message)."""
  return text.startswith("  ") or bool(_OP_LINE.match(text))


class Progress:
  """Counts the units of work begun and done and shows them (see the module docstring).

  ``units`` are the check's `engine.work_units` (what this run does of them); ``live``
  defaults to whether ``stream`` is a terminal. Lines come from one or more sources (the
  jobs of ``--jobs``); a source's unit is done when it begins the next or `finish` ends it.
  A live line is redrawn every ``tick_s`` seconds (None: only as lines come).
  """

  def __init__(self, units, stream: TextIO | None = None, live: bool | None = None,
               tick_s: float | None = 1.0):
    self._stream = stream or sys.stderr
    self._live = self._stream.isatty() if live is None else live
    self._keys = {" ".join(unit): unit for unit in units}
    self._total = len(self._keys)
    self._begun: set = set()
    self._current: dict[int, tuple] = {}
    self._logged: set[str] = set()
    self._step = ""
    self._shown = False
    self._started = time.perf_counter()
    self._lock = threading.RLock()
    self._stop = threading.Event()
    if self._live and tick_s:
      threading.Thread(target=self._tick, args=(tick_s,), daemon=True).start()

  @property
  def done(self) -> int:
    return len(self._begun) - len(self._current)

  def line(self, text: str, source: int = 0) -> None:
    """Takes one engine progress line from ``source``."""
    with self._lock:
      self._take(text.rstrip("\n"), source)

  def _take(self, text: str, source: int) -> None:
    unit = self._unit(text)
    if unit is not None and unit not in self._begun:
      self._begun.add(unit)
      self._current[source] = unit
    self._step = text.strip()
    if self._live:
      self._draw()
    elif not text.startswith(" ") and text not in self._logged:
      self._logged.add(text)
      self._write(f"{text}  ({self._counts()})\n")

  def finish(self, source: int = 0) -> None:
    """``source`` ran its last unit to the end."""
    with self._lock:
      self._current.pop(source, None)

  def message(self, text: str) -> None:
    """A line that stays (a warning, a summary), above the live line."""
    with self._lock:
      self._clear()
      self._write(text.rstrip("\n") + "\n")
      if self._live and self._step:
        self._draw()

  def close(self) -> None:
    """Every source finished; the live line is cleared and no longer redrawn."""
    self._stop.set()
    with self._lock:
      self._current.clear()
      self._clear()

  def _tick(self, seconds: float) -> None:
    while not self._stop.wait(seconds):
      with self._lock:
        if self._shown:
          self._draw()

  def _unit(self, text: str) -> tuple | None:
    match = _OP_LINE.match(text)
    if match:  # The reference's unit begins with its finite differences.
      key = f"{match['op']} {match['label']} - numpy"
      return self._keys.get(key) if match["what"] == "finite differences" else None
    words = text.split()
    for count in range(4, min(len(words), _MAX_KEY_WORDS) + 1):
      unit = self._keys.get(" ".join(words[:count]))
      if unit is not None:
        return unit
    return None

  def _counts(self) -> str:
    seconds = int(time.perf_counter() - self._started)
    return f"{self.done}/{self._total} units, {seconds // 60}:{seconds % 60:02d}"

  def _draw(self) -> None:
    width = shutil.get_terminal_size().columns - 1
    text = f"[crossgrad] {self._counts()}: {self._step}"
    self._write("\r\x1b[K" + text[:width])
    self._shown = True

  def _clear(self) -> None:
    if self._shown:
      self._write("\r\x1b[K")
      self._shown = False

  def _write(self, text: str) -> None:
    self._stream.write(text)
    self._stream.flush()
