"""``rule_not_used``: a failing ``custom_rule`` row (`crossgrad.checker.rows.custom_rule`),
read from its note: the mode differentiates the forward instead of calling the op's
backward (a kernel's own rule). Its other failures (the sentinel raised, or its cotangents
are neither twice the mode's nor the same) are ``unknown`` with the row's numbers: no other
diagnosis looks at these rows, whose reference is the mode itself."""

from __future__ import annotations

from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.checker.report import Check, Row
from crossgrad.registry.opdef import OpDef

NOT_USED = "the custom backward is not used in"
# (backend, mode) where the framework itself drops every custom rule: why, and what to do.
KNOWN_DROPS = {
    ("torch", "compiled_vmap"): (
        "Dynamo traces an autograd.Function inside a torch.func transform as plain code and "
        "drops its backward (pytorch#193279; torch 2.13 does). Keep torch.func transforms "
        "of this op out of torch.compile: the eager vmap rows call the rule")}


def diagnose(row: Row, op: OpDef | None = None) -> Diagnosis | None:
  """The diagnosis of a failing ``custom_rule`` row; None for any other row."""
  del op
  if row.check != Check.CUSTOM_RULE:
    return None
  cause = f"{row.op} {row.params} {row.implementation} {row.mode}: custom rule"
  if NOT_USED not in row.note:
    return Diagnosis(Kind.UNKNOWN, f"custom_rule {row.backend} {row.mode}: {row.note}",
                     values={"error": row.error, "tolerance": row.tolerance}, cause=cause)
  what = ("the op's backward" if row.impl == "emitted"
          else f"the kernel {row.impl!r}'s own rule")
  fix = KNOWN_DROPS.get((row.backend, row.mode), (
      "Call the custom-gradient function as the framework applies its rule in this mode "
      "(positional arguments, no tracing through it), or declare the mode unsupported"))
  return Diagnosis(
      Kind.RULE_NOT_USED, f"{row.backend} {row.mode} does not call {what}: it differentiates "
      f"the forward instead (the cotangents stay the same when the rule is scaled by 2). {fix}",
      values={"mode": row.mode, "impl": row.impl}, cause=cause)
