"""crossgrad-port's report: ``R.json`` (``{"definitions": [...]}``, one entry per
definition: name, framework, file, line, status, op, module, gradient, reasons, seconds)
and the lines printed."""

from __future__ import annotations

import collections
import json
from typing import Sequence

from crossgrad.port.prove import ORIGINAL_WRONG, PORTED, REFUSED, Result

STATUSES = (PORTED, ORIGINAL_WRONG, REFUSED)


def as_json(results: Sequence[Result]) -> dict:
  return {"definitions": [r.as_json() for r in results]}


def write(results: Sequence[Result], path: str) -> None:
  with open(path, "w", encoding="utf-8") as f:
    json.dump(as_json(results), f, indent=1)
    f.write("\n")


def text(results: Sequence[Result]) -> str:
  """One line per definition (its reasons indented below it), then the counts."""
  lines = []
  for r in results:
    d = r.definition
    what = f" -> {r.op} ({r.gradient}) in {r.module}" if r.op else ""
    lines.append(f"{d.file}:{d.line}: {d.framework} {d.name}: {r.status}{what} "
                 f"[{r.seconds:.1f} s]")
    lines += [f"  line {reason['line']}: {reason['call']}: {reason['why']}"
              for reason in r.reasons]
  lines.append(summary(results))
  return "\n".join(lines) + "\n"


def summary(results: Sequence[Result]) -> str:
  count = collections.Counter(r.status for r in results)
  return (f"{len(results)} definitions: " + ", ".join(f"{count[s]} {s}" for s in STATUSES))
