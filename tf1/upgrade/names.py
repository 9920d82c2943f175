"""Small readers of libcst nodes shared by the upgrade's idioms."""

from __future__ import annotations

import libcst as cst

_EMPTY = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
  """The source of ``node``, as written."""
  return _EMPTY.code_for_node(node).strip()


def last_name(node: cst.CSTNode) -> str:
  """The last component of a called or dotted name: ``tf.compat.v1.py_func`` -> ``py_func``."""
  if isinstance(node, cst.Call):
    node = node.func
  if isinstance(node, cst.Attribute):
    return node.attr.value
  return node.value if isinstance(node, cst.Name) else ""


def dotted(node: cst.CSTNode) -> str:
  """``a.b.c`` for a Name / Attribute chain, else ''."""
  if isinstance(node, cst.Attribute):
    base = dotted(node.value)
    return f"{base}.{node.attr.value}" if base else ""
  return node.value if isinstance(node, cst.Name) else ""


def string(node: cst.CSTNode) -> str | None:
  """The value of a plain string literal, else None."""
  if isinstance(node, cst.SimpleString):
    value = node.evaluated_value
    return value if isinstance(value, str) else None
  return None


def dict_items(node: cst.CSTNode) -> list[tuple[str, cst.BaseExpression]] | None:
  """``[(key, value)]`` of a dict literal with string keys, else None."""
  if not isinstance(node, cst.Dict):
    return None
  items = []
  for element in node.elements:
    key = string(element.key) if isinstance(element, cst.DictElement) else None
    if key is None:
      return None
    items.append((key, element.value))
  return items


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
  return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def positional(call: cst.Call) -> list[cst.Arg]:
  return [a for a in call.args if a.keyword is None and not a.star]


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> list[cst.Arg]:
  """``call``'s arguments and ``name=value`` after them."""
  equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                          whitespace_after=cst.SimpleWhitespace(""))
  args, new = list(call.args), cst.Arg(value=value, keyword=cst.Name(name), equal=equal)
  if args and isinstance(args[-1].comma, cst.Comma):  # A trailing comma: one arg a line.
    between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else \
        cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new = new.with_changes(comma=args[-1].comma)
    args[-1] = args[-1].with_changes(comma=between)
  return args + [new]


def tf1_attr(alias: str, name: str) -> cst.Attribute:
  """``<alias>.<name>``, e.g. ``tf1.py_func``."""
  return cst.Attribute(value=cst.Name(alias), attr=cst.Name(name))
