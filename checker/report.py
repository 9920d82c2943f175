"""The cross-check's result: rows, a readable table, JSON."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any


@dataclasses.dataclass(frozen=True)
class Row:
  """One comparison: an op's forward, VJP or finite-difference check in one setting.

  ``check`` is ``forward`` or ``vjp`` (against the NumPy reference), ``fd`` (the
  backward against finite differences of the forward, or of the surrogate for
  surrogate ops), ``fd_forward`` (informational for surrogate ops: how far the
  backward is from the forward's own derivative; never fails), ``declared``
  (informational, for a declared gradient: there is no oracle, the backward is only
  compared across backends; the error is its distance from the forward's derivative),
  ``special`` (forward and VJP on special values against the reference, element by
  element), ``device`` (outputs and cotangents on this device against the backend's
  first device) or ``skipped`` (a mode listed in the op's ``unsupported_modes``, with
  the reason in ``note``). ``ulps`` is the largest distance between corresponding
  elements in units in the last place of the dtype (comparison rows only).
  """

  op: str
  params: str
  backend: str
  device: str
  dtype: str
  mode: str
  check: str
  error: float | None
  tolerance: float | None
  ok: bool
  note: str = ""
  seconds: float = 0.0
  ulps: float | None = None


_COLUMNS = ("op", "params", "backend", "device", "dtype", "mode", "check", "error", "ulps",
            "tolerance", "status", "note")
# Rows that verify nothing by themselves; a report of only these checked nothing.
INFORMATIONAL = ("skipped", "declared", "fd_forward")


def _cell(row: Row, column: str) -> str:
  if column == "status":
    return "ok" if row.ok else "FAIL"
  value = getattr(row, column)
  if column == "ulps" and value is not None:
    return f"{value:.0f}" if math.isfinite(value) else "inf"
  if isinstance(value, float):
    return "nan" if math.isnan(value) else f"{value:.2e}"
  return "-" if value in (None, "") else str(value)


@dataclasses.dataclass
class Report:
  """All rows of a cross-check; ``ok`` only if every row passed."""

  rows: list[Row]
  seconds: float
  environment: dict[str, Any]

  @property
  def ok(self) -> bool:
    """Every row passed, and at least one of them verified something."""
    return self.checked > 0 and all(row.ok for row in self.rows)

  @property
  def checked(self) -> int:
    """How many rows verify something (not skipped, not informational)."""
    return sum(row.check not in INFORMATIONAL for row in self.rows)

  @property
  def failures(self) -> list[Row]:
    return [row for row in self.rows if not row.ok]

  def summary(self) -> str:
    declared = sum(row.check == "declared" for row in self.rows)
    return (f"crossgrad cross-check: {len(self.rows)} checks, {len(self.failures)} failing, "
            f"{declared} with no oracle (declared gradients), {self.seconds:.1f} s")

  def table(self, failures_only: bool = False, summary: bool = True) -> str:
    rows = self.failures if failures_only else self.rows
    cells = [_COLUMNS] + [tuple(_cell(r, c) for c in _COLUMNS) for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)) + "  " + line[-1]
             for line in cells]
    return "\n".join(lines + ([self.summary()] if summary else []))

  __str__ = table

  def to_dict(self) -> dict[str, Any]:
    rows = [dataclasses.asdict(r) for r in self.rows]
    for row in rows:  # Strict JSON has no NaN or infinity.
      for key in ("error", "ulps"):
        if isinstance(row[key], float) and not math.isfinite(row[key]):
          row[key] = str(row[key])
    return {"ok": self.ok, "seconds": self.seconds, "environment": self.environment,
            "rows": rows}

  def to_json(self, indent: int | None = 2) -> str:
    return json.dumps(self.to_dict(), indent=indent, default=str)
