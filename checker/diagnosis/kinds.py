"""What a failing row's diagnosis says: its kind, where (input, file, line) and why."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any


class Kind(enum.StrEnum):
  """The kinds of mistake a diagnosis names (a `str` enum: prints and serialises plainly).

  Wrong backwards (the reference backward against the forward's derivative): ``scale``
  (the cotangent is a constant times the right one; ``factor`` says which), ``sign`` (the
  constant is -1), ``conjugate``, ``swapped_cotangents``, ``transposed``,
  ``ignores_cotangent``, ``not_linear_in_cotangent``, ``elements`` (right except on some
  elements). Backends that disagree with a correct reference, at the first diverging
  ``xp`` call: ``cancellation``, ``ill_conditioned``, ``sign_ambiguity``,
  ``special_value``, ``intermediate``. ``unknown`` where no hypothesis fits.
  """

  SCALE = "scale"
  SIGN = "sign"
  CONJUGATE = "conjugate"
  SWAPPED_COTANGENTS = "swapped_cotangents"
  TRANSPOSED = "transposed"
  IGNORES_COTANGENT = "ignores_cotangent"
  NOT_LINEAR_IN_COTANGENT = "not_linear_in_cotangent"
  ELEMENTS = "elements"
  CANCELLATION = "cancellation"
  ILL_CONDITIONED = "ill_conditioned"
  SIGN_AMBIGUITY = "sign_ambiguity"
  SPECIAL_VALUE = "special_value"
  INTERMEDIATE = "intermediate"
  UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Diagnosis:
  """One cause of failing rows.

  ``input``: the op input it concerns (its name), where one does; ``factor``: the
  constant of a ``scale``/``sign`` mistake; ``file``/``line``: the user's source line
  (of the first diverging ``xp`` call, or of the backward); ``call``: that call as
  written (``xp.linalg.eigh``); ``values``: small JSON-able numbers that back the claim
  (both results, a condition number, element counts); ``cause``: the id that groups the
  rows it explains; ``message``: one or two sentences saying what is wrong and what to do.
  """

  kind: Kind
  message: str
  input: str | None = None
  factor: float | None = None
  file: str | None = None
  line: int | None = None
  call: str | None = None
  values: dict[str, Any] = dataclasses.field(default_factory=dict)
  cause: str = ""

  def where(self) -> str:
    """``file.py:LINE`` where known, else ''."""
    return f"{self.file}:{self.line}" if self.file and self.line else self.file or ""

  def to_dict(self) -> dict[str, Any]:
    return {**dataclasses.asdict(self), "kind": str(self.kind)}


def as_diagnosis(value: Diagnosis | dict[str, Any] | None) -> Diagnosis | None:
  """A row's diagnosis as the record, whether it is one or its ``to_dict`` (rows read back
  from a report's JSON)."""
  if value is None or isinstance(value, Diagnosis):
    return value
  fields = {f.name: value[f.name] for f in dataclasses.fields(Diagnosis) if f.name in value}
  return Diagnosis(**{**fields, "kind": Kind(value["kind"])})
