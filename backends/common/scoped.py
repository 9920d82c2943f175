"""Scoped state: a switch that is on, and off inside a scope, in `contextvars` (so each
thread and each asyncio task sees only its own scopes)."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator


class Switch:
  """On outside every scope; ``with switch.off():`` turns it off for the block."""

  def __init__(self, name: str):
    self._on = contextvars.ContextVar(name, default=True)

  def on(self) -> bool:
    return self._on.get()

  @contextlib.contextmanager
  def off(self) -> Iterator[None]:
    token = self._on.set(False)
    try:
      yield
    finally:
      self._on.reset(token)
