"""Row kinds, one table: each kind says where it runs (its `Scope`), what it needs, and
builds its rows from the scope's record (`setting`); the engine runs the table in order.

A new kind is one `RowKind` passed to `register` (built-in kinds: `KINDS` below). Its
function gets the record of its scope (`setting.ReferenceRun`, `setting.ModeRun`,
`setting.DeviceRun`) and returns rows made with the record's `RowContext` (``context.row``)
or, in the reference scope, a `RowContext` of its own; the grid, the text table, JSON and
HTML take kinds from the rows.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable, Sequence

from crossgrad.checker.report import Row
from crossgrad.checker.rows import (backend_rows, custom_rule, finite_differences,
                                    search_rows, variant_rows)
from crossgrad.registry.errors import CrossgradError


class Scope(enum.Enum):
  """Where a kind's rows are made, and the record its function gets."""

  REFERENCE = "reference"  # Per op and parameter set, float64 (`setting.ReferenceRun`).
  MODE = "mode"  # Per dtype, backend, device and mode, after `evaluate` (`setting.ModeRun`).
  DEVICE = "device"  # Per dtype, backend and device, after its modes (`setting.DeviceRun`).


@dataclasses.dataclass(frozen=True)
class RowKind:
  """One kind of row: ``rows(record)`` makes them.

  ``needs_results``: in `Scope.MODE`, it runs only where the backend's `evaluate` returned
  (else only kinds that report the failure run). ``complex_inputs``: it covers complex
  inputs and outputs; where it does not, a complex op gets no rows of it (in `Scope.MODE`,
  one ``skipped`` row says so, in place of the first such kind's).
  """

  name: str
  scope: Scope
  rows: Callable[[Any], Sequence[Row]]
  needs_results: bool = True
  complex_inputs: bool = False


KINDS: list[RowKind] = [
    RowKind("finite_differences", Scope.REFERENCE, finite_differences.rows,
            complex_inputs=True),
    RowKind("variant_differences", Scope.REFERENCE, variant_rows.reference),
    RowKind("search", Scope.REFERENCE, search_rows.rows),
    RowKind("device", Scope.MODE, backend_rows.device, complex_inputs=True),
    RowKind("forward_vjp", Scope.MODE, backend_rows.forward_vjp, needs_results=False,
            complex_inputs=True),
    RowKind("determinism", Scope.MODE, backend_rows.determinism, complex_inputs=True),
    RowKind("special", Scope.MODE, backend_rows.special),
    RowKind("round_trip", Scope.MODE, backend_rows.round_trip),
    RowKind("jvp_second_order", Scope.MODE, backend_rows.jvp_second_order),
    RowKind("variant", Scope.MODE, variant_rows.backend),
    RowKind("custom_rule", Scope.MODE, custom_rule.rows, complex_inputs=True),
    RowKind("transforms", Scope.DEVICE, backend_rows.transforms),
    RowKind("custom_rule_transforms", Scope.DEVICE, custom_rule.transform_rows),
]


def register(kind: RowKind) -> RowKind:
  """Adds ``kind`` after the others (its rows come after theirs in its scope)."""
  if any(k.name == kind.name for k in KINDS):
    raise CrossgradError("a row kind of this name is registered", argument="kind.name",
                         expected="a new name", actual=repr(kind.name))
  KINDS.append(kind)
  return kind


def unregister(name: str) -> None:
  """Removes the kind called ``name`` (nothing if there is none)."""
  KINDS[:] = [k for k in KINDS if k.name != name]


def of_scope(scope: Scope) -> list[RowKind]:
  """The kinds of ``scope``, in the order their rows come."""
  return [k for k in KINDS if k.scope == scope]
