"""What a failing row's diagnosis says: its kind, where (input, file, line) and why."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any


class Kind(enum.StrEnum):
  """The kinds of mistake a diagnosis names (a `str` enum: prints and serialises plainly).

  Wrong backwards (the reference backward against the forward's derivative): ``scale``
  (the cotangent is a constant times the right one; ``factor`` says which), ``sign`` (the
  constant is -1), ``conjugate``, ``swapped_cotangents``, ``transposed``,
  ``ignores_cotangent``, ``not_linear_in_cotangent``, ``elements`` (right except on some
  elements), ``shape`` (a cotangent of another shape than its input), ``raised`` (the
  backward raises on inputs the forward takes). Backends that disagree with a correct
  reference, at the first diverging ``xp`` call: ``cancellation``, ``ill_conditioned``,
  ``sign_ambiguity``, ``special_value``, ``intermediate``. ``unsupported``: an
  implementation lacks a rule for the row's transformation (`unsupported`);
  ``rule_not_used``: a mode differentiates the forward, not the custom rule
  (`rule_not_used`). ``unknown`` where no hypothesis fits.
  """

  SCALE = "scale"
  SIGN = "sign"
  CONJUGATE = "conjugate"
  SWAPPED_COTANGENTS = "swapped_cotangents"
  TRANSPOSED = "transposed"
  IGNORES_COTANGENT = "ignores_cotangent"
  NOT_LINEAR_IN_COTANGENT = "not_linear_in_cotangent"
  ELEMENTS = "elements"
  SHAPE = "shape"
  RAISED = "raised"
  UNSUPPORTED = "unsupported"
  RULE_NOT_USED = "rule_not_used"
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

  kind: Kind | str  # A `Kind`, or the name of a kind registered with `register_diagnosis`.
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
    """As JSON takes it: ``kind`` a string, non-finite numbers in ``values`` as strings
    ("nan", "inf"; strict JSON has none)."""
    return {**dataclasses.asdict(self), "kind": str(self.kind),
            "values": _finite(self.values)}

  @classmethod
  def from_dict(cls, data: dict[str, Any]) -> "Diagnosis":
    """The diagnosis `to_dict` gave (as JSON read back)."""
    names = {f.name for f in dataclasses.fields(cls)}
    kind = data["kind"]
    return cls(**{**{k: v for k, v in data.items() if k in names},
                  "kind": Kind(kind) if kind in Kind.__members__.values() else kind})


def _finite(value: Any) -> Any:
  if isinstance(value, float) and not math.isfinite(value):
    return str(value)
  if isinstance(value, dict):
    return {k: _finite(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_finite(v) for v in value]
  return value
