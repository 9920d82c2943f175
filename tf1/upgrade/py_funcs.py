"""The random-name py_func helper, and any py_func made under a ``{"PyFunc": name}``
override, become ``crossgrad.tf1.py_func(..., grad=grad)``.

In one function (the helper, a Keras layer's ``call``, any builder): the override block
whose map sends ``PyFunc`` / ``PyFuncStateless`` to a registered name goes, its py_func
calls get the gradient registered under that name (``tf.RegisterGradient(name)(grad)`` or
a ``@RegisterGradient(name)`` function, here or at module level), and the registration and
the random name (``rnd_name``, ``uuid``, counters) go when nothing else reads them.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import libcst as cst
import libcst.matchers as m

from crossgrad.tf1.upgrade import names
from crossgrad.tf1.upgrade.report import CHANGED, Entry, LEFT

PYFUNC_TYPES = frozenset({"PyFunc", "PyFuncStateless"})
MAKERS = frozenset({"py_func", "numpy_function"})  # What makes a PyFunc op.


@dataclasses.dataclass(frozen=True)
class Registration:
  key: str  # The code of the registered name: "rnd_name", "'MyGrad'".
  grad: cst.BaseExpression
  code: str  # The statement or decorator that registers it.
  local: bool  # In the function itself (removed with the block).
  node: cst.CSTNode | None = None  # That statement or decorator, for its line.


@dataclasses.dataclass(frozen=True)
class Block:
  """One override block to unwrap: identified by its map's code."""
  map_code: str
  grad: cst.BaseExpression
  registration: Registration
  cleanup: tuple[str, ...]  # Names whose assignments go if nothing else reads them.


def _registration(node: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
  """``RegisterGradient(key)(grad)`` -> (key code, grad)."""
  if (isinstance(node, cst.Call) and isinstance(node.func, cst.Call)
      and names.last_name(node.func) == "RegisterGradient"
      and len(node.func.args) == 1 and len(node.args) == 1):
    return names.code(node.func.args[0].value), node.args[0].value
  return None


def _decorator_keys(fn: cst.FunctionDef) -> list[tuple[str, cst.Decorator]]:
  """(key code, decorator) of ``@RegisterGradient(key)`` on ``fn``."""
  return [(names.code(d.decorator.args[0].value), d) for d in fn.decorators
          if isinstance(d.decorator, cst.Call) and len(d.decorator.args) == 1
          and names.last_name(d.decorator) == "RegisterGradient"]


def module_registrations(module: cst.Module) -> dict[str, Registration]:
  """Module-level registrations by key code (fixed names: ``"GuidedRelu"``)."""
  found = {}
  for statement in module.body:
    if isinstance(statement, cst.FunctionDef):
      for key, decorator in _decorator_keys(statement):
        found[key] = Registration(key, cst.Name(statement.name.value),
                                  names.code(decorator.decorator), False)
    elif isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
      small = statement.body[0]
      pair = _registration(small.value) if isinstance(small, cst.Expr) else None
      if pair is not None:
        found[pair[0]] = Registration(pair[0], pair[1], names.code(statement), False)
  return found


class _Own(cst.CSTVisitor):
  """A function's own override blocks, registrations and calls (not a nested function's)."""

  def __init__(self, root: cst.CSTNode):
    self.root = root
    self.withs: list[tuple[cst.With, cst.Call]] = []
    self.registrations: dict[str, Registration] = {}
    self.calls: list[cst.Call] = []

  def visit_FunctionDef(self, node):
    if node is self.root:
      return True
    for key, decorator in _decorator_keys(node):
      self.registrations[key] = Registration(key, cst.Name(node.name.value),
                                             names.code(decorator.decorator), True, decorator)
    return False

  def visit_ClassDef(self, node):
    return False

  def visit_With(self, node):
    self.withs += [(node, i.item) for i in node.items if isinstance(i.item, cst.Call)
                   and names.last_name(i.item) == "gradient_override_map"]

  def visit_SimpleStatementLine(self, node):
    small = node.body[0] if len(node.body) == 1 else None
    pair = _registration(small.value) if isinstance(small, cst.Expr) else None
    if pair is not None:
      self.registrations[pair[0]] = Registration(pair[0], pair[1], names.code(node), True, node)

  def visit_Call(self, node):
    self.calls.append(node)


def _own(node: cst.CSTNode, root: cst.CSTNode | None = None) -> _Own:
  visitor = _Own(root if root is not None else node)
  node.visit(visitor)
  return visitor


def plan(fn: cst.FunctionDef, line: Callable[[cst.CSTNode], int], path: str,
         module_regs: dict[str, Registration]) -> tuple[list[Block], list[Entry]]:
  """The PyFunc override blocks of ``fn`` to rewrite, and report entries (with lines of
  the original source) for them and for those left."""
  own, blocks, entries = _own(fn), [], []
  for with_node, call in own.withs:
    items = names.dict_items(call.args[0].value) if call.args else None
    if items is None or not {k for k, _ in items} & PYFUNC_TYPES:
      continue  # Op types (override_maps), or a map computed at run time.

    def left(reason, at=call):
      entries.append(Entry(path, line(at), LEFT, reason))

    if not {k for k, _ in items} <= PYFUNC_TYPES:
      left("the map mixes PyFunc with op types: split it into a PyFunc block and a "
           "tf1.override_map block")
      continue
    keys = {names.code(v) for _, v in items}
    key = keys.pop()
    registration = own.registrations.get(key) or module_regs.get(key)
    inner = _own(with_node.body, root=fn)
    makers = [c for c in inner.calls if names.last_name(c) in MAKERS]
    if keys:
      left("the map sends PyFunc and PyFuncStateless to different gradients")
    elif registration is None:
      left(f"no RegisterGradient({key}) in this function or at module level: pass the "
           "gradient to crossgrad.tf1.py_func(..., grad=...) by hand")
    elif not makers or any(names.keyword(c, "grad") for c in makers):
      left("no py_func / numpy_function call in the override block")
    else:
      receiver = names.dotted(call.func.value) if isinstance(call.func, cst.Attribute) else ""
      cleanup = tuple(n for n in (key, receiver) if n.isidentifier())
      blocks.append(Block(names.code(call.args[0].value), registration.grad, registration,
                          cleanup))
      grad = names.code(registration.grad)
      entries.append(Entry(path, line(call), CHANGED, f"override block removed: its py_func "
                           f"calls are crossgrad.tf1.py_func(..., grad={grad})"))
      entries += [Entry(path, line(c), CHANGED, f"-> crossgrad.tf1.py_func(..., grad={grad})")
                  for c in makers]
      if registration.local:
        entries.append(Entry(path, line(registration.node), CHANGED, "registration removed (no "
                             "random names: the gradient is passed to crossgrad.tf1.py_func)"))
  return blocks, entries


class _Rewriter(cst.CSTTransformer):
  """Applies the blocks to one (updated) function."""

  def __init__(self, root: cst.FunctionDef, blocks: list[Block], alias: str):
    self.root, self.alias = root, alias
    self.by_map = {b.map_code: b for b in blocks}
    self.remove = {b.registration.code for b in blocks if b.registration.local}
    self.stack: list[Block | None] = []

  def visit_FunctionDef(self, node):
    return node is self.root

  def leave_FunctionDef(self, original, updated):
    if original is self.root:
      return updated
    return updated.with_changes(decorators=[d for d in updated.decorators
                                            if names.code(d.decorator) not in self.remove])

  def visit_ClassDef(self, node):
    return False

  def _ours(self, item: cst.WithItem) -> Block | None:
    call = item.item
    if isinstance(call, cst.Call) and names.last_name(call) == "gradient_override_map" \
        and call.args:
      return self.by_map.get(names.code(call.args[0].value))
    return None

  def visit_With(self, node):
    self.stack.append(next((b for b in map(self._ours, node.items) if b), None))

  def leave_With(self, original, updated):
    if self.stack.pop() is None:
      return updated
    items = [i for i in updated.items if self._ours(i) is None]
    if items:
      items[-1] = items[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
      return updated.with_changes(items=items)
    body = updated.body
    if isinstance(body, cst.SimpleStatementSuite):
      return cst.SimpleStatementLine(body=body.body, leading_lines=updated.leading_lines)
    statements = list(body.body)
    statements[0] = statements[0].with_changes(
        leading_lines=[*updated.leading_lines, *statements[0].leading_lines])
    return cst.FlattenSentinel(statements)

  def leave_Call(self, original, updated):
    block = next((b for b in reversed(self.stack) if b is not None), None)
    if block is None or names.last_name(updated) not in MAKERS:
      return updated
    return updated.with_changes(func=names.tf1_attr(self.alias, "py_func"),
                                args=names.with_keyword(updated, "grad", block.grad))

  def leave_SimpleStatementLine(self, original, updated):
    if names.code(original) in self.remove:
      return cst.RemoveFromParent()
    return updated


def _assigns(fn: cst.FunctionDef, name: str, value: m.BaseMatcherNode) -> list[str]:
  """Code of ``fn``'s own statements ``name = <value>`` (one target)."""
  target = m.SimpleStatementLine(body=[m.Assign(
      targets=[m.AssignTarget(target=m.Name(name))], value=value)])
  return [names.code(s) for s in m.findall(fn.body, target)]


class _Drop(cst.CSTTransformer):
  def __init__(self, codes):
    self.codes = codes

  def leave_SimpleStatementLine(self, original, updated):
    return cst.RemoveFromParent() if names.code(original) in self.codes else updated

  def leave_IndentedBlock(self, original, updated):
    """A block's new first statement loses the blank lines it had after the one dropped."""
    if not updated.body or updated.body[0] is original.body[0]:
      return updated
    first = updated.body[0]
    lines = [line for line in first.leading_lines if line.comment is not None]
    return updated.with_changes(body=[first.with_changes(leading_lines=lines),
                                      *updated.body[1:]])


def drop_unused(fn: cst.FunctionDef, variables, value: m.BaseMatcherNode = m.DoNotCare()
                ) -> cst.FunctionDef:
  """``fn`` without its assignments ``v = <value>`` of the ``variables`` nothing reads."""
  drop = set()
  for name in set(variables):
    assigns = _assigns(fn, name, value)
    if assigns and len(m.findall(fn.body, m.Name(name))) == len(assigns):
      drop |= set(assigns)
  return fn.visit(_Drop(drop)) if drop else fn


def apply(fn: cst.FunctionDef, blocks: list[Block], alias: str) -> cst.FunctionDef:
  """``fn`` with ``blocks`` rewritten, and the random name and graph variables they used
  gone where nothing else reads them."""
  fn = fn.visit(_Rewriter(fn, blocks, alias))
  return drop_unused(fn, {n for b in blocks for n in b.cleanup})
