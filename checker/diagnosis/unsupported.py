"""``unsupported``: a row that raised because its implementation has no rule for the
transformation the row applies (a ``jax.custom_vjp`` under forward mode, a
``torch.autograd.Function`` without ``setup_context`` under ``torch.func``), read from the
framework's own message, with the fix: declare the mode unsupported, or write the rule.

`RULES` is one table; a framework message not in it is left to the other diagnoses.
"""

from __future__ import annotations

import dataclasses
import re
from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.checker.report import Check, Row
from crossgrad.registry.opdef import OpDef


@dataclasses.dataclass(frozen=True)
class Rule:
  """A framework message (``pattern``, searched in a row's note) meaning the implementation
  lacks a rule: what it lacks (``lacks``) and how to write it (``implement``)."""

  backend: str
  pattern: re.Pattern
  lacks: str
  implement: str


RULES: list[Rule] = [
    Rule("jax", re.compile(r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp"),
         "a jax.custom_vjp has no forward-mode rule",
         "define it with jax.custom_jvp (JAX transposes the JVP for the backward)"),
    Rule("torch", re.compile(r"In order to use an autograd\.Function with functorch "
                             r"transforms"),
         "a torch.autograd.Function whose forward takes ctx cannot run under torch.func "
         "transforms",
         "move ctx out of forward into a setup_context staticmethod, and set "
         "generate_vmap_rule = True (or write vmap)"),
    Rule("torch", re.compile(r"implement the jvp function for custom autograd\.Function"),
         "a torch.autograd.Function without a jvp staticmethod has no forward mode",
         "write its jvp staticmethod (with ctx.save_for_forward in setup_context)"),
]


def _mode_key(row: Row) -> str:
  """What ``unsupported_modes`` calls the row's mode: its check for forward-mode and
  second-order rows, else its mode."""
  return str(row.check) if row.check in (Check.JVP, Check.SECOND_ORDER) else row.mode


def diagnose(row: Row, op: OpDef | None = None) -> Diagnosis | None:
  """``unsupported`` for a row whose note is a message of `RULES`, else None (from the
  message alone: ``op`` is not needed)."""
  del op
  rule = next((r for r in RULES if r.backend == row.backend and r.pattern.search(row.note)),
              None)
  if rule is None:
    return None
  key = _mode_key(row)
  if row.impl == "emitted":
    what, declare = (f"the {row.backend} op",
                     f"OpDef(unsupported_modes={{'{row.backend}:{key}': 'why'}})")
  else:
    what, declare = (f"the kernel {row.impl!r}", f"cg.register_kernel(..., name="
                     f"{row.impl!r}, unsupported_modes={{'{key}': 'why'}})")
  return Diagnosis(Kind.UNSUPPORTED, f"{what} has no rule for {key} ({row.backend} "
                   f"{row.mode}): {rule.lacks}. Declare it: {declare}, or implement it: "
                   f"{rule.implement}", values={"mode": key, "impl": row.impl})


