"""Warnings raised while the check evaluates or diagnoses the ops (NumPy's overflow in a
user's forward, or in crossgrad's own files computing on the op's values) are the op's
business, not crossgrad's: `collected` records them instead of printing them, and `report`
puts them in the framework-messages log (`quiet`) with one line on stderr saying so.
"""

from __future__ import annotations

import collections
import contextlib
import sys
import warnings
from typing import Iterator, Sequence

from crossgrad.cli import quiet


@contextlib.contextmanager
def collected() -> Iterator[list[warnings.WarningMessage]]:
  """Within the block, the warnings the filters let through are recorded in the list it
  yields instead of printed (the frameworks' own filters still apply)."""
  with warnings.catch_warnings(record=True) as found:
    yield found


def lines(found: Sequence[warnings.WarningMessage]) -> list[str]:
  """Each distinct warning once: ``file:LINE: Category: message (N times)``."""
  counts = collections.Counter(
      f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}" for w in found)
  return [text + (f" ({n} times)" if n > 1 else "") for text, n in counts.items()]


def report(found: Sequence[warnings.WarningMessage], capture: quiet.Capture) -> None:
  """Writes ``found`` to the framework-messages log (kept; stderr where there is none) and
  says on stderr how many there were, the first one and where the others are."""
  if not found:
    return
  text = lines(found)
  if capture.path is None:
    for line in text:
      print(f"[crossgrad] raised while checking the ops: {line}", file=sys.stderr)
    return
  with open(capture.path, "a") as log:
    log.write("Warnings raised while crossgrad evaluated or diagnosed the ops:\n")
    log.writelines(line + "\n" for line in text)
  print(f"[crossgrad] {len(found)} warning{'s' * (len(found) != 1)} raised while checking "
        f"the ops, e.g. {text[0]}; all of them: {capture.keep()}", file=sys.stderr)
