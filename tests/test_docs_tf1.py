"""docs/tf1.md's table of op types is crossgrad.tf1.OP_TYPES (tests/test_docs.py runs its
snippets)."""

import pathlib
import re

from crossgrad import tf1

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "tf1.md"


def test_the_op_type_table_lists_op_types():
  section = DOC.read_text().split("The op types (`crossgrad.tf1.OP_TYPES`):")[1]
  rows = re.findall(r"^\| `(\w+)` \|", section.split("\n\n")[1], re.M)
  assert rows == list(tf1.OP_TYPES)
