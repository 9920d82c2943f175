"""``jax.custom_vjp`` and ``jax.custom_jvp`` functions in a source module, as `Definition`s.

Found by decorator (``@jax.custom_vjp``, ``@functools.partial(jax.custom_vjp,
nondiff_argnums=...)``, the same for ``custom_jvp``) or by assignment (``f =
jax.custom_vjp(fn, nondiff_argnums=...)``) with their rules: ``f.defvjp(fwd, bwd)``,
``f.defjvp(rule)`` or ``@f.defjvp``.

* custom_vjp: the op's forward is ``fwd`` (its residuals the op's), the backward ``bwd``
  (``nondiff_argnums`` arguments first, then the residuals and the cotangent). The
  arguments in ``nondiff_argnums`` are the op's static parameters. A custom_vjp has no
  forward mode, so the original's kernel declares ``jvp`` unsupported.
* custom_jvp: the op's forward is the primal function; the rule's tangent is transposed
  into the backward. The op language has no JVP of its own (an `OpDef` is a forward and
  a backward), so the rule must be a sum of terms each one tangent times (or divided by)
  a tangent-free coefficient, the common form: term by term, the cotangent is ``g *
  coefficient``, summed back to the input's shape (``xp.unbroadcast``). The residuals
  are the inputs; the backward recomputes the rule's primal statements. Its
  ``nondiff_argnums`` (the rule gets them first) are parameters; with several outputs the
  tangent out is a tuple, one linear form per output, and ``g`` a tuple. Another form is
  refused. The original runs in every mode.
"""

from __future__ import annotations

import ast
from typing import Any

from crossgrad.port import function_source as fs
from crossgrad.port import translate
from crossgrad.port.definition import Definition
from crossgrad.port.tables.jax import TABLE

FRAMEWORK = "jax"
_KINDS = {"jax.custom_vjp": "vjp", "jax.custom_jvp": "jvp"}
_PARTIAL = ("functools.partial",)
NO_FORWARD_MODE = "a jax.custom_vjp has no forward mode (jax.jvp and jax.hessian raise)"
NOT_LINEAR = ("a JVP rule the port cannot transpose: its tangent must be a sum of terms, "
              "each a tangent times or divided by a tangent-free coefficient")


def find(tree: ast.Module, module: Any, path: str) -> list[Definition]:
  """The module's custom_vjp and custom_jvp functions (top level), translated."""
  names = translate.aliases(tree)
  rules = _rules(tree)
  functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
  found = []
  for node in tree.body:
    kind, fn, name = None, node, getattr(node, "name", None)
    if isinstance(node, ast.FunctionDef):
      kind = _custom(node, names)
    elif (isinstance(node, ast.Assign) and len(node.targets) == 1
          and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)
          and translate.dotted(node.value.func, names) in _KINDS and node.value.args
          and isinstance(node.value.args[0], ast.Name)
          and node.value.args[0].id in functions):  # f = jax.custom_vjp(fn, ...)
      call = node.value
      kind = _KINDS[translate.dotted(call.func, names)], _argnums(call)
      fn, name = functions[call.args[0].id], node.targets[0].id
    if kind is not None:
      found.append(_Port(fn, kind[0], kind[1], rules.get(name), tree, module, path, names,
                         name).definition())
  return found


def _argnums(call: ast.Call) -> tuple[int, ...]:
  """A call's ``nondiff_argnums=`` as a tuple (empty without one)."""
  argnums = next((k.value for k in call.keywords if k.arg == "nondiff_argnums"), None)
  value = ast.literal_eval(argnums) if argnums is not None else ()
  return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _custom(node: ast.FunctionDef, names) -> tuple[str, tuple[int, ...]] | None:
  """("vjp" | "jvp", nondiff_argnums) for a custom_vjp / custom_jvp function, else None."""
  for dec in node.decorator_list:
    if translate.dotted(dec, names) in _KINDS:
      return _KINDS[translate.dotted(dec, names)], ()
    if isinstance(dec, ast.Call) and dec.args:
      head = translate.dotted(dec.func, names)
      inner = translate.dotted(dec.args[0], names)
      if head in _PARTIAL and inner in _KINDS:
        return _KINDS[inner], _argnums(dec)
  return None


def _rules(tree: ast.Module) -> dict[str, tuple]:
  """Function name -> ("vjp", fwd, bwd, line) or ("jvp", rule, line), names or nodes."""
  functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
  found = {}
  for node in tree.body:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
      call = node.value
      func = call.func
      if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        args = [functions.get(a.id) if isinstance(a, ast.Name) else None for a in call.args]
        if func.attr == "defvjp" and len(args) == 2:
          found[func.value.id] = ("vjp", *args, node.lineno)
        elif func.attr == "defjvp" and len(args) == 1:
          found[func.value.id] = ("jvp", args[0], node.lineno)
    if isinstance(node, ast.FunctionDef):
      for dec in node.decorator_list:
        if (isinstance(dec, ast.Attribute) and dec.attr == "defjvp"
            and isinstance(dec.value, ast.Name)):
          found[dec.value.id] = ("jvp", node, node.lineno)
  return found


class _Port:
  """One function's translation (`definition`)."""

  def __init__(self, node: ast.FunctionDef, kind: str, nondiff_argnums: tuple[int, ...],
               rule: tuple | None, tree: ast.Module, module: Any, path: str, names,
               name: str):
    self.node, self.kind, self.argnums, self.rule = node, kind, nondiff_argnums, rule
    self.module, self.names = module, names
    self.d = Definition(name=name, framework=FRAMEWORK, file=path, line=node.lineno,
                        original=name)
    primal = fs.undecorated(node)  # What the rules call by the definition's name.
    primal.name = name
    self.tr = fs.Translation(self.d, TABLE, tree, module, names, {
        **translate.module_functions(tree), name: primal})

  def definition(self) -> Definition:
    d = self.d
    if self.rule is None or self.rule[0] != self.kind or None in self.rule[1:-1]:
      rule = "defvjp(fwd, bwd)" if self.kind == "vjp" else "defjvp(rule)"
      d.refuse(self.node.lineno, f"def {self.node.name}", f"no {rule} of module-level "
               "functions found for it")
      return d
    sample = fs.sample_of(self.module, d.name)
    names = fs.arguments(d, self.node, sample)
    if names is None:
      return d
    fixed = [names[k] for k in self.argnums if k < len(names)]
    arrays = [n for n in fixed if n in d.inputs]
    if arrays:
      d.refuse(self.node.lineno, f"def {self.node.name}", f"nondiff_argnums holds the "
               f"array argument(s) {', '.join(arrays)}: JAX wants hashable Python values "
               "there; pass them as ordinary arguments")
      return d
    import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
    fs.count_outputs(d, getattr(self.module, d.name, None), sample, jnp.asarray)
    if d.refused:
      return d
    if self.kind == "vjp":
      self._vjp(names, fixed)
      d.unsupported_modes = {"jvp": NO_FORWARD_MODE}
    else:
      self._jvp(names, fixed)
    return self.tr.finish()

  def _translate(self, fn: ast.FunctionDef, arrays, name: str, params, body,
                 preamble=()) -> str:
    return self.tr.function(fn, arrays, name, params, body, preamble)[0]

  # custom_vjp.

  def _vjp(self, names: list[str], fixed: list[str]) -> None:
    d = self.d
    _, fwd, bwd, _ = self.rule
    own = [a.arg for a in fwd.args.args]
    if len(own) != len(names):
      d.refuse(fwd.lineno, f"def {fwd.name}", f"fwd takes {len(own)} arguments, "
               f"{d.name} {len(names)}")
      return
    self.packed = None
    body = fs.Returns(self._fwd_return).block(fwd.body)
    d.forward_source = self._translate(fwd, d.inputs, "forward", d.inputs, body,
                                       fs.renames(own, names))
    b_args = [a.arg for a in bwd.args.args]
    if bwd.args.vararg or len(b_args) != len(fixed) + 2:
      d.refuse(bwd.lineno, f"def {bwd.name}", f"bwd must take the {len(fixed)} "
               "nondiff_argnums arguments, the residuals and the cotangent")
      return
    res, g = b_args[-2:]
    preamble = fs.renames(b_args[:len(fixed)], fixed)
    preamble.append(f"{res} = " + {"tuple": "residuals", "one": "residuals[0]",
                                   None: "None"}[self.packed])
    if g != "g":
      preamble.append(f"{g} = g")
    diff = [n for n in names if n not in fixed]
    body = fs.Returns(lambda v, node: fs.cotangents(d, v, node, diff)).block(bwd.body)
    d.nondiff = fs.always_none(d, bwd.body, diff)
    d.backward_source = self._translate(bwd, {res, g, "residuals", "g"}, "backward",
                                        ["residuals", "g"], body, preamble)
    d.backward_line = bwd.lineno
    d.residuals = (res,)

  def _fwd_return(self, value: ast.expr | None, node: ast.Return) -> ast.expr:
    """``return out, res`` -> ``return out, <res as a tuple of arrays>``."""
    if not (isinstance(value, ast.Tuple) and len(value.elts) == 2):
      self.d.refuse(node.lineno, ast.unparse(node), "fwd must return (output, residuals)")
      return value
    out, res = value.elts
    if isinstance(res, ast.Constant) and res.value is None:
      packed, new = None, fs.expr("()")
    elif isinstance(res, ast.Tuple):
      packed, new = "tuple", res
    else:
      packed, new = "one", ast.Tuple([res], ast.Load())
    if self.packed not in (None, packed) and packed is not None:
      self.d.refuse(node.lineno, ast.unparse(node), "fwd returns residuals of different "
                    "structures")
    self.packed = self.packed or packed
    return ast.Tuple([out, new], ast.Load())

  # custom_jvp.

  def _jvp(self, names: list[str], fixed: list[str]) -> None:
    d = self.d
    rule = self.rule[1]
    inputs = list(d.inputs)
    primals = [n for n in names if n not in fixed]
    body = fs.Returns(lambda v, node: ast.Tuple([v, fs.expr(
        "(" + "".join(f"{n}, " for n in inputs) + ")")], ast.Load())).block(self.node.body)
    d.forward_source = self._translate(self.node, inputs, "forward", inputs, body)
    transpose = _Transpose(d, rule, primals, len(fixed))
    transposed = transpose.body()
    if transposed is None:
      return
    preamble = ["(" + "".join(f"{n}, " for n in inputs) + ") = residuals"]
    preamble += fs.renames([a.arg for a in rule.args.args[:len(fixed)]], fixed)
    if any(isinstance(n, ast.Name) and n.id == transpose.primals
           for s in transposed for n in ast.walk(s)):
      preamble.append(f"{transpose.primals} = (" + "".join(f"{n}, " for n in primals) + ")")
    d.backward_source = self._translate(
        rule, set(inputs) | {"g", "residuals", transpose.primals}, "backward",
        ["residuals", "g"], transposed, preamble)
    d.backward_line = rule.lineno
    d.residuals = tuple(inputs)
    d.jvp_source = ast.unparse(rule)


class _NotLinear(Exception):
  pass


class _Transpose:
  """A JVP rule's body as a backward: its primal statements, then ``return`` of one
  cotangent per input (`NOT_LINEAR` forms refused)."""

  def __init__(self, d: Definition, rule: ast.FunctionDef, names: list[str], fixed: int):
    self.d, self.rule, self.names, self.fixed = d, rule, names, fixed
    args = [a.arg for a in rule.args.args][fixed:]
    self.primals, self.tangents_arg = (args + ["", ""])[:2]
    self.tangents: list[str] = []
    self.defs: dict[str, ast.expr] = {}

  def body(self) -> list[ast.stmt] | None:
    d, rule = self.d, self.rule
    if len(rule.args.args) != self.fixed + 2 or rule.args.vararg:
      d.refuse(rule.lineno, f"def {rule.name}", "the JVP rule must take the "
               "nondiff_argnums arguments, then (primals, tangents)")
      return None
    kept, out = [], None
    for stmt in rule.body:
      if isinstance(stmt, ast.Return):
        out = stmt
        break
      kept += self._statement(stmt)
    value = out.value if out is not None else None
    if not (isinstance(value, ast.Tuple) and len(value.elts) == 2):
      d.refuse(rule.lineno, f"def {rule.name}", "the JVP rule must end with return "
               "primal_out, tangent_out")
      return None
    n = d.num_outputs
    tangent_out = value.elts[1]
    outs = [tangent_out] if n == 1 else (
        tangent_out.elts if isinstance(tangent_out, (ast.Tuple, ast.List))
        and len(tangent_out.elts) == n else None)
    if outs is None:
      d.refuse(out.lineno, ast.unparse(tangent_out)[:120], f"the tangent out must be a "
               f"tuple of {n} tangents, one per output")
      return None
    try:
      terms = [(k, t, c) for k, o in enumerate(outs)
               for t, c in self._terms(self._substituted(o))]
    except _NotLinear as e:
      d.refuse(out.lineno, ast.unparse(e.args[0])[:120], NOT_LINEAR)
      return None
    by_tangent = dict(zip(self.tangents, self.names))
    cotangents = []
    for name in self.d.inputs:
      parts = [("g" if n == 1 else f"g[{k}]") + (f" * {c}" if c else "")
               for k, t, c in terms if by_tangent.get(t) == name]
      cotangents.append(f"xp.unbroadcast({' + '.join(parts)}, {name})" if parts
                        else f"xp.zeros_like({name})")
    ret = ast.fix_missing_locations(ast.copy_location(ast.Return(fs.expr(
        "(" + "".join(f"{c}, " for c in cotangents) + ")")), out))
    return _live(kept, ret) + [ret]

  def _statement(self, stmt: ast.stmt) -> list[ast.stmt]:
    """A statement before the return: kept, or (where it reads tangents) recorded."""
    reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    if self._unpacks_primals(stmt):
      return []  # `x, y = primals`: the backward has them by these names already.
    if not reads & ({self.tangents_arg} | set(self.tangents) | set(self.defs)):
      return [stmt]
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
      target, value = stmt.targets[0], stmt.value
      pairs = (list(zip(target.elts, value.elts)) if isinstance(target, ast.Tuple)
               and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts)
               else [(target, value)])
      kept = []
      for t, v in pairs:
        read = {n.id for n in ast.walk(v) if isinstance(n, ast.Name)}
        if isinstance(v, ast.Name) and v.id == self.tangents_arg:
          if not (isinstance(t, (ast.Tuple, ast.List))
                  and all(isinstance(e, ast.Name) for e in t.elts)):
            break
          self.tangents = [e.id for e in t.elts]
        elif self._unpacks_primals(ast.Assign([t], v)):
          continue
        elif not read & ({self.tangents_arg} | set(self.tangents) | set(self.defs)):
          kept.append(ast.fix_missing_locations(ast.copy_location(ast.Assign([t], v), stmt)))
        elif isinstance(t, ast.Name) and self.tangents_arg not in read:
          self.defs[t.id] = self._substituted(v)
        else:
          break
      else:
        return kept
    self.d.refuse(stmt.lineno, ast.unparse(stmt).splitlines()[0][:120], NOT_LINEAR)
    return []

  def _unpacks_primals(self, stmt: ast.stmt) -> bool:
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
      return False
    t, v = stmt.targets[0], stmt.value
    return (isinstance(v, ast.Name) and v.id == self.primals
            and isinstance(t, (ast.Tuple, ast.List))
            and [ast.unparse(e) for e in t.elts] == self.names)

  def _substituted(self, node: ast.expr) -> ast.expr:
    defs = self.defs

    class Sub(ast.NodeTransformer):
      def visit_Name(self, n):
        return defs[n.id] if n.id in defs else n
    return Sub().visit(ast.parse(ast.unparse(node), mode="eval").body)

  def _has_tangent(self, node: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) and n.id in self.tangents for n in ast.walk(node))

  def _terms(self, node: ast.expr) -> list[tuple[str, str | None]]:
    """(tangent, coefficient source or None for 1) of a linear tangent expression."""
    if isinstance(node, ast.Name) and node.id in self.tangents:
      return [(node.id, None)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
      sign = "-1.0" if isinstance(node.op, ast.USub) else None
      return [(t, _times(c, sign)) for t, c in self._terms(node.operand)]
    if isinstance(node, ast.BinOp):
      left, right = self._has_tangent(node.left), self._has_tangent(node.right)
      if isinstance(node.op, (ast.Add, ast.Sub)) and left and right:
        rest = self._terms(node.right)
        if isinstance(node.op, ast.Sub):
          rest = [(t, _times(c, "-1.0")) for t, c in rest]
        return self._terms(node.left) + rest
      if isinstance(node.op, ast.Mult) and left != right:
        inner, factor = (node.left, node.right) if left else (node.right, node.left)
        return [(t, _times(c, f"({ast.unparse(factor)})")) for t, c in self._terms(inner)]
      if isinstance(node.op, ast.Div) and left and not right:
        return [(t, _times(c, f"(1.0 / ({ast.unparse(node.right)}))"))
                for t, c in self._terms(node.left)]
    raise _NotLinear(node)


def _live(statements: list[ast.stmt], end: ast.stmt) -> list[ast.stmt]:
  """``statements`` without the assignments nothing after them reads (the rule's
  ``primal_out = f(x)``: the backward needs only the coefficients)."""
  needed = {n.id for n in ast.walk(end) if isinstance(n, ast.Name)}
  kept = []
  for stmt in reversed(statements):
    stored = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    if isinstance(stmt, ast.Assign) and stored and not stored & needed:
      continue
    needed |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)
               and isinstance(n.ctx, ast.Load)}
    kept.append(stmt)
  return kept[::-1]


def _times(coefficient: str | None, factor: str | None) -> str | None:
  if factor is None:
    return coefficient
  return factor if coefficient is None else f"{coefficient} * {factor}"
