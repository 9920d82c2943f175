"""Reading optimised HLO text: instruction and fusion counts, and a structural signature.

The signature is each computation's multiset of ``shape opcode`` pairs (constants with
their value), so two modules compare equal when XLA fused and scheduled them alike,
whatever their names, metadata or operand order.
"""

from __future__ import annotations

import collections
import re

_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*)$")
_HEADER = re.compile(r"^(?:ENTRY\s+)?%?[\w.\-]+\s*\(.*\{\s*$")


def _shape_and_rest(text: str) -> tuple[str, str]:
  """Splits ``f32[8]{0} add(...)`` or ``(f32[8], s32[]) tuple(...)`` after the shape."""
  if text.startswith("("):
    depth = 0
    for i, ch in enumerate(text):
      depth += {"(": 1, ")": -1}.get(ch, 0)
      if depth == 0:
        return text[:i + 1], text[i + 1:].strip()
  shape, _, rest = text.partition(" ")
  return shape, rest


def computations(text: str) -> list[list[str]]:
  """Per computation, its instructions as ``shape opcode`` (``constant(value)`` kept)."""
  result, current = [], None
  for line in text.splitlines():
    if current is None:
      if _HEADER.match(line):
        current = []
      continue
    if line.strip() == "}":
      result.append(current)
      current = None
      continue
    match = _INSTRUCTION.match(line)
    if match:
      shape, rest = _shape_and_rest(match.group(1))
      opcode = rest.split("(", 1)[0]
      if opcode == "constant":
        opcode = rest.split(")", 1)[0] + ")"
      current.append(f"{shape} {opcode}")
  return result


def summary(text: str) -> dict:
  """Instruction count, fusion count and the structural signature of an HLO module."""
  comps = computations(text)
  instructions = [i for comp in comps for i in comp]
  signature = sorted(tuple(sorted(collections.Counter(comp).items())) for comp in comps)
  return {"instructions": len(instructions),
          "fusions": sum(i.split()[-1] == "fusion" for i in instructions),
          "computations": len(comps), "signature": signature}
