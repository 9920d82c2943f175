"""The cross-check's result: rows, a readable table, JSON."""

from __future__ import annotations

import collections
import dataclasses
import enum
import json
import math
from typing import Any

from crossgrad.checker.diagnosis.kinds import Diagnosis


class Check(enum.StrEnum):
  """The built-in checks a row reports (its ``check``; the kinds that make them:
  `crossgrad.checker.rows`). A `str` enum: rows print and serialise them as the plain
  strings; a kind registered elsewhere names its checks with plain strings.
  """

  FD = "fd"
  FD_FORWARD = "fd_forward"
  DECLARED = "declared"
  FORWARD = "forward"
  VJP = "vjp"
  SPECIAL = "special"
  DEVICE = "device"
  DETERMINISM = "determinism"
  JVP = "jvp"
  SECOND_ORDER = "second_order"
  ROUND_TRIP = "round_trip"
  SKIPPED = "skipped"
  REFERENCE = "reference"
  SAMPLE = "sample"
  VARIANT = "variant"
  SEARCH = "search"
  FINITE = "finite"
  CUSTOM_RULE = "custom_rule"


_BUILT_IN = {check.value: check for check in Check}
# Rows that verify nothing by themselves; a report of only these checked nothing.
INFORMATIONAL = (Check.SKIPPED, Check.DECLARED, Check.FD_FORWARD)
OK, FAIL, ADVISORY = "ok", "FAIL", "ADVISORY"


@dataclasses.dataclass(frozen=True)
class Row:
  """One comparison: an op's forward, VJP or finite-difference check in one setting.

  ``check`` (a `Check`, or a kind's own name: `crossgrad.checker.rows`) is one of:

  * ``fd``: the reference backward against finite differences of the forward (of the
    surrogate for surrogate ops), float64;
  * ``fd_forward``: informational for surrogate ops: how far the backward is from the
    forward's own derivative; never fails;
  * ``declared``: informational, for a declared gradient: there is no oracle, the backward
    is only compared across backends; the error is its distance from the forward's
    derivative;
  * ``forward``, ``vjp``: a backend's outputs and input cotangents against the NumPy
    reference, sampled inputs (also per transformation mode, on a batch);
  * ``special``: forward and VJP on special values against the reference, element by
    element; ``advisory`` where they differ only at special elements (`special_values`);
  * ``device``: outputs and cotangents on this device against the backend's first device;
  * ``determinism``: the same setting run twice, bit for bit (``determinism=True``);
  * ``jvp``, ``second_order``: forward-mode tangents and the gradient of <vjp, v> against
    finite differences (`higher_order`);
  * ``round_trip``: an export mode's outputs and cotangents against the backend's eager ones;
  * ``skipped``: a mode or check the op or backend cannot run, with the reason in ``note``;
  * ``reference``, ``sample``: the NumPy reference, or the op's ``sample``, raised;
  * ``variant``: on an input variant derived from the sample (``variant`` names it:
    `crossgrad.checker.variants`), the reference against finite differences (backend
    ``numpy``) or a backend's outputs and cotangents against the reference;
  * ``search``: the smallest input a property-based search found where the reference
    backward is not the derivative (``variant`` describes it; `crossgrad.checker.search`),
    or, passing, how many examples it drew;
  * ``finite``: failing only: the reference in a dtype below float64 is NaN or inf where
    float64's, on the same inputs and cotangent, is a number that dtype holds
    (`crossgrad.checker.overflow`).
  * ``custom_rule``: the mode's cotangents with the op's backward (a kernel's own rule)
    scaled by 2 against twice its own: the mode uses the custom rule
    (`crossgrad.checker.rows.custom_rule`).

  ``impl`` is the implementation checked: ``emitted`` (the op crossgrad emits) or the name of
  a registered kernel (docs/kernels.md); the table and the grid show it after the backend.

  ``ulps`` is the largest distance between corresponding elements in units in the last
  place of the dtype (comparison rows only). A failing row's ``diagnosis`` says what is
  wrong and where (`crossgrad.checker.diagnosis`; the binary's pass over failing rows,
  None elsewhere). An ``advisory`` row passes (``ok``) but reports
  a divergence at special values; ``advisory`` says what differed ("NaN vs a number",
  "raises"). ``status`` is ``ok``, ``FAIL`` or ``ADVISORY``.
  """

  op: str
  params: str
  backend: str
  device: str
  dtype: str
  mode: str
  check: Check | str
  error: float | None
  tolerance: float | None
  ok: bool
  note: str = ""
  seconds: float = 0.0
  ulps: float | None = None
  advisory: str = ""
  diagnosis: Diagnosis | None = None
  impl: str = "emitted"
  variant: str = ""

  @property
  def status(self) -> str:
    return ADVISORY if self.advisory else OK if self.ok else FAIL

  @property
  def implementation(self) -> str:
    """The backend and, for a registered kernel, its name: ``jax[pallas_relu]``."""
    return self.backend if self.impl == "emitted" else f"{self.backend}[{self.impl}]"


@dataclasses.dataclass(frozen=True)
class RowContext:
  """Where rows come from: op, parameter label, backend, device, dtype and mode; makes
  the rows of that setting (`row`) and of a neighbouring one (`at`)."""

  op: str
  params: str
  backend: str
  device: str
  dtype: str
  mode: str

  def at(self, **changes: str) -> "RowContext":
    return dataclasses.replace(self, **changes)

  def row(self, check: Check, error: float | None = None, tolerance: float | None = None,
          ok: bool = False, note: str = "", seconds: float = 0.0, ulps: float | None = None,
          advisory: str = "") -> Row:
    return Row(self.op, self.params, self.backend, self.device, self.dtype, self.mode,
               as_check(check), error, tolerance, ok, note, seconds, ulps, advisory)


def as_check(name: str) -> Check | str:
  """A built-in check as its `Check` member, another (a registered kind's) as it is."""
  return _BUILT_IN.get(name, name)


def first_line(e: BaseException) -> str:
  """An exception as a row's note: its type and the first line of its message."""
  text = str(e).strip().splitlines()
  return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


_COLUMNS = ("op", "params", "backend", "device", "dtype", "mode", "check", "error", "ulps",
            "tolerance", "status", "note")


def _cell(row: Row, column: str) -> str:
  if column == "status":
    return row.status
  if column == "backend":
    return row.implementation
  if column == "note" and row.variant:
    return f"[{row.variant}] {row.note}".strip()
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

  @property
  def advisories(self) -> list[Row]:
    """Passing rows that report a divergence at special values."""
    return [row for row in self.rows if row.advisory]

  def summary(self) -> str:
    declared = sum(row.check == Check.DECLARED for row in self.rows)
    what = collections.Counter(part for row in self.advisories
                               for part in row.advisory.split(", "))
    advisory = (f"{len(self.advisories)} advisory at special values"
                + (f" ({', '.join(f'{k}: {n}' for k, n in sorted(what.items()))})"
                   if what else "") + ", ")
    return (f"crossgrad cross-check: {len(self.rows)} checks, {len(self.failures)} failing, "
            f"{declared} with no oracle (declared gradients), {advisory}"
            f"{self.seconds:.1f} s")

  def table(self, failures_only: bool = False, summary: bool = True,
            rows: list[Row] | None = None) -> str:
    """Aligned text of ``rows`` (default: every row, or the failing ones)."""
    rows = rows if rows is not None else self.failures if failures_only else self.rows
    cells = [_COLUMNS] + [tuple(_cell(r, c) for c in _COLUMNS) for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)) + "  " + line[-1]
             for line in cells]
    return "\n".join(lines + ([self.summary()] if summary else []))

  __str__ = table

  def to_dict(self) -> dict[str, Any]:
    rows = [{**dataclasses.asdict(r), "status": r.status,
             "diagnosis": r.diagnosis and r.diagnosis.to_dict()} for r in self.rows]
    for row in rows:  # Strict JSON has no NaN or infinity.
      for key in ("error", "ulps"):
        if isinstance(row[key], float) and not math.isfinite(row[key]):
          row[key] = str(row[key])
    return {"ok": self.ok, "seconds": self.seconds, "environment": self.environment,
            "rows": rows}

  def to_json(self, indent: int | None = 2) -> str:
    return json.dumps(self.to_dict(), indent=indent, default=str)

  @classmethod
  def from_dict(cls, data: dict[str, Any]) -> "Report":
    """The report `to_dict` gave (as JSON read back: "nan", "inf" strings are floats)."""
    names = [f.name for f in dataclasses.fields(Row)]
    rows = []
    for entry in data["rows"]:
      values = {k: entry[k] for k in names if k in entry}
      for key in ("error", "ulps"):
        if isinstance(values.get(key), str):
          values[key] = float(values[key])
      diagnosis = values.get("diagnosis")
      rows.append(Row(**{**values, "check": as_check(values["check"]),
                         "diagnosis": diagnosis and Diagnosis.from_dict(diagnosis)}))
    return cls(rows, data["seconds"], data["environment"])
