"""Framework code as ``xp`` code: an AST rewriter driven by one `Table` per source framework.

A `Table` maps a call's canonical dotted name (``"torch.exp"``,
``"torch.nn.functional.relu"``, ``"jax.numpy.exp"``, ``"tensorflow.math.exp"``; aliases
are resolved from the module's imports by `aliases`) and a tensor method or attribute
(``"Tensor.clamp"``, ``"Tensor.shape"``, under the table's ``method_prefix``) to an
`Entry`. An entry is made from the source framework's signature and an ``xp`` template
(`entry`): ``entry("input, min=None, max=None", "xp.clip({input}, min={min},
max={max})")``; the call's arguments are bound to the signature, translated, and put in
the template. A template may also be a function of the bound `Arg`s returning the text,
or raise `Refused`. Each entry carries ``examples``, calls on `EXAMPLE_ARRAYS`, that
tests/test_port_tables.py runs through the framework and through the rendered entry.

`translate_function` rewrites a function body: calls through the table; Python control
flow on shapes, dtypes, parameters and constants kept as Python; and a `Refusal` for
each construct it cannot carry: control flow or host reads on array values, randomness,
in-place writes to arrays that are not the function's own fresh results (inputs, saved
tensors, views of them), calls without an entry. A framework's source module rewrites its
own protocol first (``ctx.save_for_backward``, ``defvjp``...) into plain Python on
names, then calls it.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import inspect
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from crossgrad.port.definition import Refusal

# Why a construct is refused, in the report's words.
VALUE_FLOW = "control flow on array values (write it with xp.where, or keep it outside)"
HOST_READ = "reads array values on the host (value-dependent)"
RANDOM = "randomness: the port could not reproduce the original's random numbers"
IN_PLACE = ("in-place write to an input, a saved tensor or a view of one (the op "
            "language has no aliasing)")
NO_ENTRY = "no translation for this call (not in the table)"
EXTENSION = "call into a compiled extension or another module (its code is not Python here)"
INDEXING = "indexing with an array (data-dependent shape or gather): not translated"
UNSUPPORTED = "a construct the translator does not carry"
STOP_GRADIENT = ("stop_gradient: the op language has no gradient stop inside a definition "
                 "(the op's backward is its whole gradient)")

# Names a table example may use: x, y, z standard normal (3, 4); p, q positive (3, 4);
# m boolean (3, 4); i integers in [0, 3) (3, 4); v a vector (4,); w a (4, 5) matrix;
# s a (3, 1) column (for broadcasting); b a (2, 3, 4) batch. Everything else in an example
# is a Python literal.
EXAMPLE_SHAPES = {"x": (3, 4), "y": (3, 4), "z": (3, 4), "p": (3, 4), "q": (3, 4),
                  "m": (3, 4), "i": (3, 4), "v": (4,), "w": (4, 5), "s": (3, 1),
                  "b": (2, 3, 4)}


def EXAMPLE_ARRAYS(rng: np.random.Generator) -> dict[str, np.ndarray]:  # pylint: disable=invalid-name
  """The example inputs, drawn from ``rng`` (float64)."""
  found = {}
  for name, shape in EXAMPLE_SHAPES.items():
    if name in "pq":
      found[name] = rng.uniform(0.5, 2.0, shape)
    elif name == "m":
      found[name] = rng.standard_normal(shape) > 0
    elif name == "i":
      found[name] = rng.integers(0, 3, shape)
    else:
      found[name] = rng.standard_normal(shape)
  return found


class Refused(Exception):
  """Raised by an entry (or the translator) for a call it cannot carry: ``why``, in words."""

  def __init__(self, why: str):
    super().__init__(why)
    self.why = why


@dataclasses.dataclass(frozen=True)
class Arg:
  """One bound argument of a call, translated: its source text, and whether it holds an
  array (or a value computed from one); ``given`` is False for a default; ``parts``: the
  arguments a ``*args`` parameter gathered."""
  src: str
  is_array: bool = False
  given: bool = True
  node: ast.expr | None = None
  parts: tuple["Arg", ...] = ()

  def __str__(self) -> str:  # Parenthesized where compound: renders append `.dtype` to it.
    return _paren(self.src)

  @property
  def is_none(self) -> bool:
    return self.src == "None"


ARRAY, VIEW, PYTHON = "array", "view", "python"  # What an entry returns.


@dataclasses.dataclass(frozen=True)
class Entry:
  """How one call of the source framework becomes ``xp`` code.

  Attributes:
    spec: the source framework's signature of the call (methods: ``self`` first), as in
      a ``def``; ``*args`` gathers into a tuple.
    template: ``"xp.f({x}, axis={dim})"``, or a function of the bound `Arg`s (by name)
      returning the text; may raise `Refused`.
    returns: `ARRAY` (a new array), `VIEW` (an array sharing its input's memory, so
      not writable in place) or `PYTHON` (a shape, dtype, size: kept as Python).
    examples: calls on `EXAMPLE_ARRAYS` (``"x, dim=1"``; methods: receiver first) that
      tests run through the framework and through this entry.
    attribute: a tensor attribute (``Tensor.shape``), not a call.
  """
  spec: str
  template: str | Callable[..., str]
  returns: str = ARRAY
  examples: tuple[str, ...] = ()
  attribute: bool = False

  def signature(self) -> inspect.Signature:
    return _signature(self.spec)

  def render(self, args: Sequence[Arg], kwargs: Mapping[str, Arg]) -> str:
    """The ``xp`` text of the call with these (translated) arguments."""
    try:
      bound = self.signature().bind(*args, **kwargs)
    except TypeError as e:
      raise Refused(f"arguments do not match the entry's signature ({self.spec}): {e}"
                    ) from None
    values = {}
    for name, parameter in self.signature().parameters.items():
      if name in bound.arguments:
        value = bound.arguments[name]
        if parameter.kind == parameter.VAR_POSITIONAL:
          value = _var_tuple(value)
        elif parameter.kind == parameter.VAR_KEYWORD:
          raise Refused(f"keyword arguments {sorted(value)} have no translation")
        values[name] = value
      else:
        default = parameter.default
        values[name] = Arg(repr(default) if default is not parameter.empty else "", False,
                           False)
    if callable(self.template):
      return self.template(**values)
    return self.template.format(**{k: _paren(v.src) for k, v in values.items()})


def _signature(spec: str) -> inspect.Signature:
  namespace: dict[str, Any] = {}
  exec(f"def _f({spec}): pass", namespace)  # pylint: disable=exec-used
  return inspect.signature(namespace["_f"])


def _paren(src: str) -> str:
  """``src`` safe to put inside an expression: parenthesized unless atomic."""
  try:
    node = ast.parse(src, mode="eval").body
  except SyntaxError:
    return src
  atomic = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript, ast.Tuple,
            ast.List)
  return src if isinstance(node, atomic) else f"({src})"


def _var_tuple(values: Sequence[Arg]) -> Arg:
  """``*shape`` arguments as one tuple: ``f(2, 3)`` -> ``(2, 3)``; a single tuple, list or
  shape stays itself; a single name may be either, decided at run time."""
  return dataclasses.replace(_gathered(values), parts=tuple(values))


def _gathered(values: Sequence[Arg]) -> Arg:
  if len(values) == 1:
    (one,) = values
    node = one.node
    if isinstance(node, (ast.Tuple, ast.List)) or (
        isinstance(node, ast.Attribute) and node.attr == "shape") or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr == "size" and not node.args):
      return one
    if isinstance(node, ast.Constant) or isinstance(node, (ast.BinOp, ast.UnaryOp)):
      return Arg(f"({one.src},)")
    return Arg(f"(tuple({one.src}) if isinstance({one.src}, (tuple, list)) else ({one.src},))")
  return Arg("(" + "".join(f"{v.src}, " for v in values) + ")")


def entry(spec: str, template: str | Callable[..., str], *, returns: str = ARRAY,
          examples: Iterable[str] = (), attribute: bool = False) -> Entry:
  """An `Entry` (see its attributes); the signature is checked here."""
  _signature(spec)
  return Entry(spec, template, returns, tuple(examples), attribute)


def einsum(equation: Arg, operands: Arg) -> str:
  """``einsum(equation, *operands)`` as broadcast products and a sum: each operand's axes
  permuted to one order of all the indices, the missing ones inserted, the product
  summed over the indices not in the output (explicit ``->`` or NumPy's implicit one)."""
  try:
    spec = ast.literal_eval(equation.src).replace(" ", "")
  except (ValueError, SyntaxError, AttributeError):
    raise Refused("einsum with an equation that is not a literal string") from None
  ins, arrow, out = spec.partition("->")
  terms, ops = ins.split(","), list(operands.parts)
  if "..." in spec or len(terms) != len(ops) or any(len(set(t)) != len(t) for t in terms):
    raise Refused("einsum with '...', a repeated index in one operand or an operand "
                  "list has no translation")
  if not arrow:
    out = "".join(sorted(c for c in set(ins) - {","} if ins.count(c) == 1))
  letters = list(dict.fromkeys(out + "".join(terms)))
  if any(c not in ins for c in out):
    raise Refused("einsum output index missing from the operands")
  factors = []
  for term, op in zip(terms, ops):
    present = sorted(term, key=letters.index)
    perm = tuple(term.index(c) for c in present)
    src = str(op) if perm == tuple(range(len(term))) else f"xp.permute_dims({op}, {perm})"
    for k, c in enumerate(letters):
      if c not in term:
        src = f"xp.expand_dims({src}, axis={k})"
    factors.append(src)
  product = " * ".join(factors)
  summed = tuple(range(len(out), len(letters)))
  return f"xp.sum({product}, axis={summed})" if summed else (
      product if len(factors) == 1 else f"({product})")


def gelu(x: Arg, approximate: Arg, tanh: tuple[str, ...], exact: tuple[str, ...]) -> str:
  """GELU of ``x``: its tanh form where ``approximate`` is written as one of ``tanh``, the
  exact one (with ``xp.erf``) where as one of ``exact`` ("" where it is left out)."""
  if approximate.src in tanh:
    return f"(0.5 * {x} * (1.0 + xp.tanh(0.7978845608028654 * ({x} + 0.044715 * {x} ** 3))))"
  if approximate.src in exact:
    return f"(0.5 * {x} * (1.0 + xp.erf({x} * 0.7071067811865476)))"
  raise Refused(f"gelu with approximate={approximate} has no translation")


EINSUM_EXAMPLES = ('"ij,jk->ik", x, w', '"bij,jk->bik", b, w', '"ij,ij->i", x, y',
                   '"ij->ji", x', '"i,j->ij", v, v', '"ij,j", x, v', '"ij,ij->", x, y')


def refusal(why: str) -> Entry:
  """An entry that refuses every call, with ``why``."""
  def render(**args: Arg) -> str:
    raise Refused(why)
  return entry("*args, **kwargs", render)


@dataclasses.dataclass(frozen=True)
class Table:
  """One source framework's translations.

  Attributes:
    framework: "torch", "jax", "tensorflow".
    roots: top-level module names that belong to the framework ("torch").
    entries: canonical dotted name, or ``method_prefix + "." + method``, -> `Entry`.
    method_prefix: how method entries are keyed ("Tensor").
    constants: canonical dotted name -> ``xp`` text (dtypes: ``"torch.float32"`` ->
      ``"xp.float32"``).
    refused: dotted-name prefix -> why (``"torch.rand": RANDOM``).
    ignored_contexts: ``with`` context managers that change nothing in the op language
      (``torch.no_grad``): their bodies are kept, the ``with`` dropped.
  """
  framework: str
  roots: tuple[str, ...]
  entries: Mapping[str, Entry]
  method_prefix: str = "Tensor"
  constants: Mapping[str, str] = dataclasses.field(default_factory=dict)
  refused: Mapping[str, str] = dataclasses.field(default_factory=dict)
  ignored_contexts: tuple[str, ...] = ()

  def method(self, name: str) -> Entry | None:
    return self.entries.get(f"{self.method_prefix}.{name}")

  def refusal(self, dotted: str) -> str | None:
    for prefix, why in self.refused.items():
      if dotted == prefix or dotted.startswith(prefix):
        return why
    return None


def aliases(tree: ast.Module) -> dict[str, str]:
  """Local name -> canonical dotted name, from the module's top-level imports
  (``import torch.nn.functional as F`` -> ``{"F": "torch.nn.functional"}``)."""
  found = {}
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        if a.asname:
          found[a.asname] = a.name
        else:
          root = a.name.split(".")[0]
          found[root] = root
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      for a in node.names:
        found[a.asname or a.name] = f"{node.module}.{a.name}"
  return found


def dotted(node: ast.expr, names: Mapping[str, str]) -> str | None:
  """The canonical dotted name of ``a.b.c`` with ``a`` resolved by ``names``; None if
  ``node`` is not a chain of attributes on an imported name."""
  parts = []
  while isinstance(node, ast.Attribute):
    parts.append(node.attr)
    node = node.value
  if not isinstance(node, ast.Name) or node.id not in names:
    return None
  return ".".join([names[node.id], *reversed(parts)])


# Python's own functions kept as they are on Python values (shapes, sizes, parameters).
_PYTHON_CALLS = frozenset({
    "len", "range", "int", "float", "bool", "tuple", "list", "dict", "zip", "enumerate",
    "min", "max", "abs", "isinstance", "sum", "reversed", "sorted", "all", "any", "round",
    "str", "map", "divmod", "pow", "type", "getattr", "hasattr"})
_HOST_MODULES = ("math", "numpy", "operator", "functools", "itertools")
_SHAPE_ATTRS = frozenset({"shape", "dtype", "ndim"})


@dataclasses.dataclass
class Scope:
  """What the translator knows while it rewrites one function.

  Attributes:
    table: the source framework's table.
    names: local alias -> canonical dotted name (`aliases`).
    arrays: local names holding arrays (or values computed from them).
    fresh: array names that are the function's own results, writable in place (an
      in-place write there becomes a new binding).
    helpers: the module's top-level functions by name (`module_functions`): one called
      is translated too (on its first call, its parameters holding arrays where that
      call passes them), into ``helper_sources``, and called with ``xp`` first.
    constants: module-level Python constants the function may read (name -> value text).
    helper_sources: translated helpers, name -> source (the output defines them).
    used_constants: the constants it read (the output defines them).
    bound: every local name (parameters included) bound so far.
    refusals: what it could not carry, in source order.
  """
  table: Table
  names: Mapping[str, str]
  arrays: set[str] = dataclasses.field(default_factory=set)
  fresh: set[str] = dataclasses.field(default_factory=set)
  helpers: Mapping[str, ast.FunctionDef] = dataclasses.field(default_factory=dict)
  constants: dict[str, str] = dataclasses.field(default_factory=dict)
  helper_sources: dict[str, str] = dataclasses.field(default_factory=dict)
  used_constants: set[str] = dataclasses.field(default_factory=set)
  bound: set[str] = dataclasses.field(default_factory=set)
  refusals: list[Refusal] = dataclasses.field(default_factory=list)

  def refuse(self, node: ast.AST, why: str) -> None:
    call = ast.unparse(node) if isinstance(node, ast.AST) else str(node)
    call = call.splitlines()[0] if call else ""
    self.refusals.append(Refusal(getattr(node, "lineno", 0), call[:120], why))


class _Translator(ast.NodeTransformer):
  """Expressions: each visit returns the translated node; `_array` tells whether a
  translated node holds an array (`Scope.arrays`)."""

  def __init__(self, scope: Scope):
    self.scope = scope
    # By id, each holding its node: a node dropped from the tree must not free its id for
    # a new node to be mistaken for it.
    self._array_nodes: dict[int, ast.AST] = {}
    self._view_nodes: dict[int, ast.AST] = {}

  # Bookkeeping.

  def mark(self, node: ast.expr, array: bool, view: bool = False) -> ast.expr:
    if array:
      self._array_nodes[id(node)] = node
    if view:
      self._view_nodes[id(node)] = node
    return node

  def is_array(self, node: ast.AST) -> bool:
    return id(node) in self._array_nodes

  def is_view(self, node: ast.AST) -> bool:
    return id(node) in self._view_nodes

  def expr(self, node: ast.expr) -> ast.expr:
    new = self.visit(node)
    return ast.copy_location(new, node) if isinstance(new, ast.AST) else new

  def refuse(self, node: ast.AST, why: str) -> ast.expr:
    self.scope.refuse(node, why)
    return self.mark(ast.copy_location(ast.Constant(None), node), True)

  # Leaves.

  def visit_Name(self, node: ast.Name) -> ast.expr:
    scope = self.scope
    if isinstance(node.ctx, ast.Load) and node.id not in scope.bound:
      if node.id in scope.constants:
        scope.used_constants.add(node.id)
      elif node.id not in scope.helpers and not hasattr(builtins, node.id):
        return self.refuse(node, f"reads {node.id}, a module-level value that is not a "
                           "Python constant (or an undefined name)")
    return self.mark(node, node.id in scope.arrays,
                     view=node.id in scope.arrays and node.id not in scope.fresh)

  def visit_Constant(self, node: ast.Constant) -> ast.expr:
    return node

  def _parse(self, src: str, like: ast.AST, array: bool, view: bool = False) -> ast.expr:
    new = ast.parse(src, mode="eval").body
    for n in ast.walk(new):
      ast.copy_location(n, like)
    return self.mark(new, array, view)

  def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
    name = dotted(node, self.scope.names)
    if name is not None:
      return self._global(node, name)
    value = self.expr(node.value)
    if not self.is_array(value):
      return ast.copy_location(ast.Attribute(value, node.attr, node.ctx), node)
    found = self.scope.table.method(node.attr)
    if found is None or not found.attribute:
      return self.refuse(node, f"{NO_ENTRY}: attribute .{node.attr} of an array")
    return self._render(found, node, [Arg(ast.unparse(value), True, True, value)], {})

  def _global(self, node: ast.expr, name: str) -> ast.expr:
    table = self.scope.table
    if name in table.constants:
      return self._parse(table.constants[name], node, False)
    why = table.refusal(name)
    if why:
      return self.refuse(node, why)
    root = name.split(".")[0]
    if root in _HOST_MODULES:
      return node  # math.pi, np.float32: Python values.
    if root in table.roots:
      return self.refuse(node, f"{NO_ENTRY}: {name}")
    return self.refuse(node, f"{EXTENSION}: {name}")

  # Operators.

  def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
    left, right = self.expr(node.left), self.expr(node.right)
    new = ast.BinOp(left, node.op, right)
    return self.mark(new, self.is_array(left) or self.is_array(right))

  def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
    operand = self.expr(node.operand)
    if isinstance(node.op, ast.Not) and self.is_array(operand):
      return self.refuse(node, VALUE_FLOW)
    return self.mark(ast.UnaryOp(node.op, operand), self.is_array(operand))

  def visit_Compare(self, node: ast.Compare) -> ast.expr:
    left = self.expr(node.left)
    comparators = [self.expr(c) for c in node.comparators]
    array = self.is_array(left) or any(map(self.is_array, comparators))
    if array and (len(comparators) > 1 or any(
        isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops)):
      if not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
        return self.refuse(node, VALUE_FLOW)
      array = False  # `g is None`: a Python question about the value, not its contents.
    return self.mark(ast.Compare(left, node.ops, comparators), array)

  def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
    values = [self.expr(v) for v in node.values]
    if any(map(self.is_array, values)):
      return self.refuse(node, VALUE_FLOW)
    return ast.BoolOp(node.op, values)

  def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
    test = self.expr(node.test)
    if self.is_array(test):
      return self.refuse(node, VALUE_FLOW)
    body, orelse = self.expr(node.body), self.expr(node.orelse)
    return self.mark(ast.IfExp(test, body, orelse),
                     self.is_array(body) or self.is_array(orelse))

  def visit_Tuple(self, node: ast.Tuple) -> ast.expr:
    elts = [self.expr(e) for e in node.elts]
    return self.mark(ast.Tuple(elts, node.ctx), any(map(self.is_array, elts)))

  def visit_List(self, node: ast.List) -> ast.expr:
    elts = [self.expr(e) for e in node.elts]
    return self.mark(ast.List(elts, node.ctx), any(map(self.is_array, elts)))

  def visit_Starred(self, node: ast.Starred) -> ast.expr:
    value = self.expr(node.value)
    return self.mark(ast.Starred(value, node.ctx), self.is_array(value))

  def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
    value = self.expr(node.value)
    index = self.expr(node.slice)
    if isinstance(value, ast.Tuple) and isinstance(index, ast.Constant) and isinstance(
        index.value, int) and -len(value.elts) <= index.value < len(value.elts):
      return value.elts[index.value]  # (a, b)[0]: a.
    if self.is_array(index) and self.is_array(value):
      return self.refuse(node, INDEXING)
    new = ast.Subscript(value, index, node.ctx)
    return self.mark(new, self.is_array(value) or self.is_array(index),
                     view=self.is_array(value))

  def visit_Slice(self, node: ast.Slice) -> ast.expr:
    parts = [self.expr(p) if p is not None else None for p in (node.lower, node.upper,
                                                                 node.step)]
    return self.mark(ast.Slice(*parts), any(p is not None and self.is_array(p)
                                            for p in parts))

  def visit_Lambda(self, node: ast.Lambda) -> ast.expr:
    return self.refuse(node, f"{UNSUPPORTED}: a lambda")

  def generic_visit(self, node: ast.AST) -> ast.AST:
    if isinstance(node, ast.expr):
      return self.refuse(node, f"{UNSUPPORTED}: {type(node).__name__}")
    return super().generic_visit(node)

  # Calls.

  def visit_Call(self, node: ast.Call) -> ast.expr:
    func = node.func
    args = [self._arg(a) for a in node.args]
    kwargs = {}
    for k in node.keywords:
      if k.arg is None:
        return self.refuse(node, f"{UNSUPPORTED}: **kwargs in a call")
      kwargs[k.arg] = self._arg(k.value)
    name = dotted(func, self.scope.names)
    if name is not None:
      return self._call_global(node, name, args, kwargs)
    if isinstance(func, ast.Name):
      return self._call_local(node, func.id, args, kwargs)
    if isinstance(func, ast.Attribute):
      receiver = self.expr(func.value)
      if self.is_array(receiver):
        return self._call_method(node, func.attr, receiver, args, kwargs)
      new = ast.Call(ast.Attribute(receiver, func.attr, ast.Load()),
                     [a.node for a in args], [ast.keyword(k, v.node) for k, v in kwargs.items()])
      return new  # A method of a Python value (a list's append, a shape's index).
    return self.refuse(node, f"{UNSUPPORTED}: a call of a computed function")

  def _arg(self, node: ast.expr) -> Arg:
    if isinstance(node, ast.List):  # xp takes tuples where torch takes lists.
      node = ast.copy_location(ast.Tuple(node.elts, ast.Load()), node)
    new = self.expr(node)
    return Arg(ast.unparse(new), self.is_array(new), True, new)

  def _render(self, found: Entry, node: ast.expr, args: list[Arg],
              kwargs: dict[str, Arg]) -> ast.expr:
    try:
      src = found.render(args, kwargs)
    except Refused as e:
      return self.refuse(node, e.why)
    array = found.returns != PYTHON
    return self._parse(src, node, array, view=found.returns == VIEW)

  def _call_global(self, node, name, args, kwargs) -> ast.expr:
    table = self.scope.table
    why = table.refusal(name)
    if why:
      return self.refuse(node, why)
    found = table.entries.get(name)
    if found is not None and not found.attribute:
      return self._render(found, node, args, kwargs)
    root = name.split(".")[0]
    any_array = any(a.is_array for a in (*args, *kwargs.values()))
    if root in _HOST_MODULES and not any_array:
      return self._plain(node, args, kwargs, array=False)
    if root in _HOST_MODULES:
      return self.refuse(node, f"{HOST_READ}: {name} on an array")
    if root in table.roots or root in ("torch", "jax", "tensorflow"):
      return self.refuse(node, f"{NO_ENTRY}: {name}")
    return self.refuse(node, f"{EXTENSION}: {name}")

  def _plain(self, node: ast.Call, args, kwargs, array: bool) -> ast.expr:
    new = ast.Call(node.func, [a.node for a in args],
                   [ast.keyword(k, v.node) for k, v in kwargs.items()])
    return self.mark(new, array)

  def _call_local(self, node, name, args, kwargs) -> ast.expr:
    scope = self.scope
    any_array = any(a.is_array for a in (*args, *kwargs.values()))
    if name in scope.helpers and name not in scope.bound:
      why = _translate_helper(scope, scope.helpers[name], args, kwargs)
      if why:
        return self.refuse(node, why)
      new = ast.Call(ast.Name(name, ast.Load()),
                     [ast.Name("xp", ast.Load())] + [a.node for a in args],
                     [ast.keyword(k, v.node) for k, v in kwargs.items()])
      return self.mark(new, any_array)
    if name in _PYTHON_CALLS and name not in scope.arrays and hasattr(builtins, name):
      if name in ("float", "int", "bool", "round") and any_array:
        return self.refuse(node, f"{HOST_READ}: {name}() of an array")
      if name in ("len",):
        return self._plain(node, args, kwargs, array=False)
      if name in ("min", "max", "sum", "abs", "all", "any") and any_array:
        return self.refuse(node, f"{NO_ENTRY}: Python's {name}() of arrays")
      return self._plain(node, args, kwargs, array=any_array)
    return self.refuse(node, f"{NO_ENTRY}: {name}")

  def _call_method(self, node, method, receiver, args, kwargs) -> ast.expr:
    table = self.scope.table
    found = table.method(method)
    self_arg = Arg(ast.unparse(receiver), True, True, receiver)
    if found is None and method.endswith("_") and table.method(method[:-1]):
      return self.refuse(node, f"{IN_PLACE}: .{method}() used as a value")
    if found is None or found.attribute:
      return self.refuse(node, f"{NO_ENTRY}: .{method}() of an array")
    return self._render(found, node, [self_arg, *args], kwargs)


class _Statements:
  """Statements: control flow kept as Python where its condition is, refused where it
  reads array values; assignments track which names hold (fresh) arrays."""

  def __init__(self, scope: Scope):
    self.scope = scope
    self.tr = _Translator(scope)

  def block(self, body: Sequence[ast.stmt]) -> list[ast.stmt]:
    out = []
    for stmt in body:
      new = self.stmt(stmt)
      for s in new:
        ast.copy_location(s, stmt)
        ast.fix_missing_locations(s)
      out += new
    return out or [ast.Pass()]

  def stmt(self, node: ast.stmt) -> list[ast.stmt]:
    method = getattr(self, f"_{type(node).__name__}", None)
    if method is None:
      self.scope.refuse(node, f"{UNSUPPORTED}: {type(node).__name__} statement")
      return []
    return method(node)

  def _Pass(self, node):
    return [node]

  def _Expr(self, node: ast.Expr):
    value = node.value
    if isinstance(value, ast.Constant):
      return []  # A docstring.
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
        and value.func.attr.endswith("_")):
      in_place = self._in_place_method(value)
      if in_place is not None:
        return in_place
    new = self.tr.expr(value)
    return [ast.Expr(new)]

  def _in_place_method(self, call: ast.Call) -> list[ast.stmt] | None:
    """``t.mul_(2)`` on a fresh array ``t``: ``t = t * 2``; on anything else, refused."""
    func = call.func
    base = self.scope.table.method(func.attr[:-1])
    if base is None:
      return None
    if not (isinstance(func.value, ast.Name) and func.value.id in self.scope.fresh):
      if isinstance(func.value, ast.Name) and func.value.id not in self.scope.arrays:
        return None
      self.scope.refuse(call, IN_PLACE)
      return []
    plain = ast.copy_location(ast.Call(ast.Attribute(func.value, func.attr[:-1], ast.Load()),
                                       call.args, call.keywords), call)
    new = self.tr.expr(plain)
    return [ast.Assign([ast.Name(func.value.id, ast.Store())], new)]

  def _bind(self, target: ast.expr, array: bool, fresh: bool) -> None:
    scope = self.scope
    for n in ast.walk(target):
      if isinstance(n, ast.Name):
        scope.bound.add(n.id)
        (scope.arrays.add if array else scope.arrays.discard)(n.id)
        (scope.fresh.add if array and fresh else scope.fresh.discard)(n.id)
        scope.constants.pop(n.id, None)

  def _Assign(self, node: ast.Assign):
    for target in node.targets:
      if isinstance(target, ast.Subscript):
        return self._item_assign(node, target)
      if isinstance(target, ast.Attribute):
        self.scope.refuse(node, f"{UNSUPPORTED}: assignment to an attribute")
        return []
    value = self.tr.expr(node.value)
    array = self.tr.is_array(value)
    fresh = array and not self.tr.is_view(value)
    for target in node.targets:
      if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(
          target.elts) == len(value.elts) and not any(
              isinstance(e, ast.Starred) for e in (*target.elts, *value.elts)):
        for t, v in zip(target.elts, value.elts):  # a, b = x, 2: one by one.
          self._bind(t, self.tr.is_array(v), not self.tr.is_view(v))
      else:
        self._bind(target, array, fresh)
    return [ast.Assign(node.targets, value)]

  def _AnnAssign(self, node: ast.AnnAssign):
    if node.value is None:
      return []
    return self._Assign(ast.copy_location(ast.Assign([node.target], node.value), node))

  def _item_assign(self, node: ast.Assign, target: ast.Subscript):
    """``t[mask] = c`` on a fresh array ``t`` and a Python value ``c``:
    ``t = xp.where(mask, xp.full_like(t, c), t)``."""
    scope = self.scope
    if len(node.targets) != 1 or not isinstance(target.value, ast.Name):
      scope.refuse(node, f"{UNSUPPORTED}: item assignment")
      return []
    name = target.value.id
    if name not in scope.fresh:
      scope.refuse(node, IN_PLACE if name in scope.arrays else
                   f"{UNSUPPORTED}: item assignment")
      return []
    index, value = self.tr.expr(target.slice), self.tr.expr(node.value)
    if not self.tr.is_array(index):
      scope.refuse(node, f"{UNSUPPORTED}: assignment to a slice of an array")
      return []
    if self.tr.is_array(value):
      scope.refuse(node, f"{UNSUPPORTED}: masked assignment of an array (its values fill "
                   "the selected places in order)")
      return []
    new = ast.parse(f"xp.where({ast.unparse(index)}, xp.full_like({name}, "
                    f"{ast.unparse(value)}), {name})", mode="eval").body
    return [ast.Assign([ast.Name(name, ast.Store())], new)]

  def _AugAssign(self, node: ast.AugAssign):
    target = node.target
    if isinstance(target, ast.Name) and target.id in self.scope.arrays and (
        target.id not in self.scope.fresh):
      self.scope.refuse(node, IN_PLACE)
      return []
    if not isinstance(target, ast.Name):
      self.scope.refuse(node, f"{UNSUPPORTED}: augmented assignment to {ast.unparse(target)}")
      return []
    load = ast.copy_location(ast.Name(target.id, ast.Load()), target)
    value = self.tr.expr(ast.copy_location(ast.BinOp(load, node.op, node.value), node))
    array = self.tr.is_array(value)
    self._bind(target, array, True)
    return [ast.Assign([ast.Name(target.id, ast.Store())], value)]

  def _Return(self, node: ast.Return):
    value = self.tr.expr(node.value) if node.value is not None else None
    return [ast.Return(value)]

  def _If(self, node: ast.If):
    test = self.tr.expr(node.test)
    if self.tr.is_array(test):
      self.scope.refuse(node.test, VALUE_FLOW)
      return []
    before = (set(self.scope.arrays), set(self.scope.fresh))
    body = self.block(node.body)
    after_body = (set(self.scope.arrays), set(self.scope.fresh))
    self.scope.arrays, self.scope.fresh = set(before[0]), set(before[1])
    orelse = self.block(node.orelse) if node.orelse else []
    self.scope.arrays |= after_body[0]  # An array on either branch may be one after.
    self.scope.fresh &= after_body[1]
    self.scope.fresh |= after_body[1] - before[0] - self.scope.arrays
    return [ast.If(test, body, orelse)]

  def _For(self, node: ast.For):
    iterable = self.tr.expr(node.iter)
    if self.tr.is_array(iterable) and not isinstance(iterable, (ast.Tuple, ast.List)):
      self.scope.refuse(node.iter, f"{VALUE_FLOW}: a loop over an array")
      return []
    self._bind(node.target, self.tr.is_array(iterable), False)
    body = self.block(node.body)
    if node.orelse:
      self.scope.refuse(node, f"{UNSUPPORTED}: for ... else")
    return [ast.For(node.target, iterable, body, [])]

  def _While(self, node: ast.While):
    test = self.tr.expr(node.test)
    if self.tr.is_array(test):
      self.scope.refuse(node.test, VALUE_FLOW)
      return []
    return [ast.While(test, self.block(node.body), [])]

  def _Assert(self, node: ast.Assert):
    test = self.tr.expr(node.test)
    if self.tr.is_array(test):
      return []  # A check on values: the op language has none (the original keeps it).
    return [ast.Assert(test, node.msg)]

  def _With(self, node: ast.With):
    table = self.scope.table
    for item in node.items:
      expr = item.context_expr
      func = expr.func if isinstance(expr, ast.Call) else expr
      name = dotted(func, self.scope.names)
      if name not in table.ignored_contexts or item.optional_vars is not None:
        self.scope.refuse(node, f"{UNSUPPORTED}: with {ast.unparse(expr)}")
        return []
    return self.block(node.body)

  def _Raise(self, node: ast.Raise):
    return [node]

  def _FunctionDef(self, node: ast.FunctionDef):
    self.scope.refuse(node, f"{UNSUPPORTED}: a nested function ({node.name})")
    return []

  def _Break(self, node):
    return [node]

  def _Continue(self, node):
    return [node]


def translate_function(node: ast.FunctionDef, scope: Scope, *, name: str,
                       params: Sequence[str], keyword_params: Mapping[str, str] | None = None,
                       body: Sequence[ast.stmt] | None = None,
                       optional: Mapping[str, str] | None = None,
                       preamble: Sequence[str] = ()) -> str:
  """``def name(xp, *params, *, **keyword_params): <body translated>`` as source text.

  ``params`` are the positional parameters after ``xp`` (then ``optional`` ones, name ->
  default source); ``keyword_params`` maps the keyword-only ones to their default's
  source; ``body`` replaces ``node.body`` (a framework's source module passes its
  protocol-free rewrite); ``preamble`` lines go first as they are (the source module's
  unpacking of its protocol, whose names it put in ``scope``). Refusals go to
  ``scope.refusals``.
  """
  keyword_params = dict(keyword_params or {})
  optional = dict(optional or {})
  scope.bound |= {"xp", *params, *optional, *keyword_params}
  statements = _Statements(scope)
  new_body = [s for line in preamble for s in ast.parse(line).body]
  new_body += statements.block(node.body if body is None else body)
  args = ast.arguments(
      posonlyargs=[], args=[ast.arg(p) for p in ("xp", *params, *optional)],
      kwonlyargs=[ast.arg(k) for k in keyword_params],
      kw_defaults=[ast.parse(v, mode="eval").body for v in keyword_params.values()],
      defaults=[ast.parse(v, mode="eval").body for v in optional.values()], vararg=None,
      kwarg=None)
  fn = ast.FunctionDef(name=name, args=args, body=new_body, decorator_list=[], returns=None)
  ast.fix_missing_locations(fn)
  return ast.unparse(fn)


def module_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
  """The module's top-level functions without decorators (those a definition may call)."""
  return {n.name: n for n in tree.body
          if isinstance(n, ast.FunctionDef) and not n.decorator_list}


def _translate_helper(scope: Scope, fn: ast.FunctionDef, args: Sequence[Arg],
                      kwargs: Mapping[str, Arg]) -> str | None:
  """Translates helper ``fn`` into ``scope.helper_sources`` (once); why not, or None."""
  if fn.name in scope.helper_sources:
    return None
  a = fn.args
  if a.vararg or a.kwarg or a.posonlyargs or a.kwonlyargs:
    return f"{UNSUPPORTED}: helper {fn.name} takes *args, **kwargs or keyword-only arguments"
  params = [p.arg for p in a.args]
  try:
    bound = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                               for p in params]).bind_partial(*args, **kwargs).arguments
  except TypeError as e:
    return f"{UNSUPPORTED}: call of helper {fn.name}: {e}"
  arrays = {p for p, arg in bound.items() if arg.is_array}
  child = Scope(scope.table, scope.names, arrays=arrays, helpers=scope.helpers,
                constants=scope.constants, helper_sources=scope.helper_sources)
  defaults = [ast.unparse(d) for d in a.defaults]
  positional = params[:len(params) - len(defaults)]
  scope.helper_sources[fn.name] = ""  # Recursion stops here.
  source = translate_function(fn, child, name=fn.name, params=positional,
                              optional=dict(zip(params[len(positional):], defaults)))
  scope.helper_sources[fn.name] = source
  scope.used_constants |= child.used_constants
  scope.refusals += child.refusals
  return None


def module_constants(tree: ast.Module, module: Any) -> dict[str, str]:
  """Module-level names bound to plain Python constants (numbers, strings, tuples of
  them), name -> ``repr`` of the value read from the imported ``module``."""
  found = {}
  for node in tree.body:
    targets = node.targets if isinstance(node, ast.Assign) else (
        [node.target] if isinstance(node, ast.AnnAssign) else [])
    for target in targets:
      if isinstance(target, ast.Name):
        value = getattr(module, target.id, None) if module is not None else None
        if _plain_value(value):
          found[target.id] = repr(value)
  return found


def _plain_value(value: Any) -> bool:
  if isinstance(value, (bool, int, float, str)) and not isinstance(value, np.generic):
    return True
  return isinstance(value, tuple) and all(map(_plain_value, value))


def example_sources(table: Table, key: str, example: str) -> tuple[str, str]:
  """An entry's example as (the framework's call, as text; ``def example(xp, <arrays>):
  return <the call translated>``): tests evaluate the first with the framework's arrays
  and the second with NumPy's ``xp`` on the same `EXAMPLE_ARRAYS` (a refusal raises
  `Refused`)."""
  prefix = table.method_prefix + "."
  if key.startswith(prefix):
    call = ast.parse(f"_f({example})", mode="eval").body
    receiver, rest = call.args[0], call.args[1:]
    method = key[len(prefix):]
    pieces = [ast.unparse(a) for a in rest] + [ast.unparse(k) for k in call.keywords]
    framework = f"({ast.unparse(receiver)}).{method}" + (
        "" if table.entries[key].attribute else f"({', '.join(pieces)})")
  else:
    framework = f"{key}({example})"
  tree = ast.parse(f"import {table.roots[0]}\ndef example():\n  return {framework}\n")
  names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                  and n.id in EXAMPLE_SHAPES})
  scope = Scope(table, aliases(tree), arrays=set(names), fresh=set(names))
  source = translate_function(tree.body[1], scope, name="example", params=names)
  if scope.refusals:
    raise Refused(scope.refusals[0].why)
  return framework, source
