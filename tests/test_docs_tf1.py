"""docs/tf1.md: every ```python snippet runs, in order, as one program; its table of op
types is crossgrad.tf1.OP_TYPES."""

import pathlib
import re

from crossgrad import tf1

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "tf1.md"


def test_every_python_snippet_runs_in_order():
  blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.M | re.S)
  assert len(blocks) >= 10
  namespace = {"__name__": "docs_tf1"}
  for i, block in enumerate(blocks):
    exec(compile(block, f"{DOC}[python block {i}]", "exec"), namespace)  # pylint: disable=exec-used


def test_the_op_type_table_lists_op_types():
  section = DOC.read_text().split("The op types (`crossgrad.tf1.OP_TYPES`):")[1]
  rows = re.findall(r"^\| `(\w+)` \|", section.split("\n\n")[1], re.M)
  assert rows == list(tf1.OP_TYPES)
