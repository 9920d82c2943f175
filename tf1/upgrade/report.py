"""The upgrade's report, like tf_upgrade_v2's: per file and line, what changed, what stays
as it is (it runs in TF2 unchanged) and what was left for a person, with the reason."""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

CHANGED, KEPT, LEFT = "changed", "kept", "left"


@dataclasses.dataclass(frozen=True)
class Entry:
  path: str
  line: int
  status: str  # CHANGED, KEPT or LEFT.
  what: str

  def __str__(self) -> str:
    return f"{self.path}:{self.line}: {self.status}: {self.what}"

  def short(self) -> str:
    return f"line {self.line}: {self.status}: {self.what}"


@dataclasses.dataclass
class FileResult:
  """One file's upgrade: its entries, the new source (None: unchanged) and its ports."""
  path: str
  entries: list[Entry] = dataclasses.field(default_factory=list)
  source: str | None = None
  ports_path: str | None = None
  commands: list[str] = dataclasses.field(default_factory=list)
  helpers: set[str] = dataclasses.field(default_factory=set)  # Py_func helpers rewritten.
  findings: list = dataclasses.field(default_factory=list)  # scan's, not yet migrated.
  unreadable: bool = False  # Not Python 3, or the rewrite did not parse: left as it was.

  @property
  def left(self) -> list[Entry]:
    return [e for e in self.entries if e.status == LEFT]


def text(results: Sequence[FileResult]) -> str:
  """The whole report: entries by file and line, the port checks, then a summary."""
  lines = ["crossgrad-upgrade report", ""]
  for result in results:
    if not result.entries and not result.commands:
      continue
    lines.append(f"{result.path}:" + ("" if result.source is not None else " (unchanged)"))
    lines += [f"  {e.short()}" for e in sorted(result.entries, key=lambda e: e.line)]
    if result.ports_path:
      lines.append(f"  ports: {result.ports_path}")
    lines += [f"  check: {c}" for c in result.commands]
    lines.append("")
  lines.append(summary(results))
  return "\n".join(lines) + "\n"


def summary(results: Iterable[FileResult]) -> str:
  results = list(results)
  count = {s: sum(e.status == s for r in results for e in r.entries)
           for s in (CHANGED, KEPT, LEFT)}
  rewritten = sum(r.source is not None for r in results)
  return (f"{rewritten} of {len(results)} files rewritten: {count[CHANGED]} changes, "
          f"{count[KEPT]} kept as they run in TF2, {count[LEFT]} left for you (see 'left')")
