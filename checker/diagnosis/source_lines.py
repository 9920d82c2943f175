"""Where in the user's code a backward makes an input's cotangent."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Callable

from crossgrad.registry.opdef import OpDef


def user_functions(op: OpDef) -> tuple[Callable, Callable]:
  """The forward and backward the user wrote: those a generated forward stands for
  (``defined_by``: a `crossgrad.tf1.port`'s legacy forward and gradient), else the op's."""
  defined = getattr(op.forward, "defined_by", None)
  return tuple(defined) if defined and len(defined) == 2 else (op.forward, op.backward)


def cotangent_line(backward: Callable,
                   index: int | None) -> tuple[str | None, int | None]:
  """The file of ``backward`` and the line that makes the cotangent of input ``index``:
  the ``index``-th element of a returned tuple (or, where that element is a name, the last
  line assigning it); the return line where the result is not a literal tuple, or for
  ``index`` None; the ``def`` line where the source cannot be read (a generated
  function)."""
  function = inspect.unwrap(backward)
  try:
    file = inspect.getsourcefile(function)
    lines, first = inspect.getsourcelines(function)
  except (OSError, TypeError):
    code = getattr(function, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code else (None, None)
  try:
    tree = ast.parse(textwrap.dedent("".join(lines)))
  except SyntaxError:  # A lambda cut out of a longer expression.
    return file, first
  found = _line_in(tree, index)
  return file, first + found - 1 if found else first


def _line_in(tree: ast.AST, index: int | None) -> int | None:
  """The line (1-based within ``tree``) of input ``index``'s cotangent in the first
  function or lambda of ``tree``."""
  function = next((n for n in ast.walk(tree)
                   if isinstance(n, (ast.FunctionDef, ast.Lambda))), None)
  if function is None:
    return None
  if isinstance(function, ast.Lambda):
    value = function.body
    return _element_line(value, index, {}) or value.lineno
  assigned: dict[str, int] = {}
  for node in ast.walk(function):
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
      targets = node.targets if isinstance(node, ast.Assign) else [node.target]
      for target in targets:
        for name in ast.walk(target):
          if isinstance(name, ast.Name):
            assigned[name.id] = max(assigned.get(name.id, 0), node.lineno)
  returns = [n for n in ast.walk(function) if isinstance(n, ast.Return) and n.value]
  if not returns:
    return function.lineno
  last = max(returns, key=lambda n: n.lineno)
  return _element_line(last.value, index, assigned) or last.lineno


def _element_line(value: ast.AST, index: int | None,
                  assigned: dict[str, int]) -> int | None:
  if (index is None or not isinstance(value, (ast.Tuple, ast.List))
      or index >= len(value.elts)):
    return None
  element = value.elts[index]
  if isinstance(element, ast.Name) and element.id in assigned:
    return assigned[element.id]
  return element.lineno
