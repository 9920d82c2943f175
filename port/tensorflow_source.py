"""``tf.custom_gradient`` functions in a source module, as `Definition`s.

The function's body up to its ``return y, grad`` is the op's forward; the nested ``grad``
is the backward. The forward values the grad closes over (inputs or computed arrays)
become the op's residuals; the function's Python arguments are the op's static
parameters (TF hands ``grad`` one gradient per positional argument: those of the
parameters, None, are dropped). ``grad(upstream)``, ``grad(dy1, dy2)`` and
``grad(*grad_ys)`` are read against the outputs.

``variables=``: a grad that takes it differentiates ``tf.Variable``\\ s the function reads
from outside its arguments. An op's inputs are its arguments and it holds no state, so
such a definition is refused with that reason (pass the variable's value as an argument
to port it).
"""

from __future__ import annotations

import ast
from typing import Any

from crossgrad.port import function_source as fs
from crossgrad.port import translate
from crossgrad.port.definition import Definition
from crossgrad.port.tables.tensorflow import TABLE

FRAMEWORK = "tensorflow"
_DECORATORS = ("tensorflow.custom_gradient", "tensorflow.python.ops.custom_gradient"
               ".custom_gradient")
VARIABLES = ("the grad takes variables=: it differentiates tf.Variables read from outside "
             "the function's arguments, state an op cannot carry (its inputs are its "
             "arguments); pass the variable's value as an argument to port it")


def find(tree: ast.Module, module: Any, path: str) -> list[Definition]:
  """The module's ``tf.custom_gradient`` functions (top level), translated."""
  names = translate.aliases(tree)
  return [_Port(node, tree, module, path, names).definition() for node in tree.body
          if isinstance(node, ast.FunctionDef) and any(
              translate.dotted(dec, names) in _DECORATORS for dec in node.decorator_list)]


def _stored(nodes) -> set[str]:
  return {n.id for node in nodes for n in ast.walk(node)
          if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _lambda_grad(fn: ast.Lambda, ret: ast.Return) -> ast.FunctionDef:
  """``return y, lambda dy: ...``: the lambda as a nested ``def grad(dy): return ...``."""
  grad = ast.FunctionDef(name="grad", args=fn.args, body=[ast.Return(fn.body)],
                         decorator_list=[], returns=None, type_comment=None)
  return ast.fix_missing_locations(ast.copy_location(grad, ret))


class _Port:
  """One function's translation (`definition`)."""

  def __init__(self, node: ast.FunctionDef, tree: ast.Module, module: Any, path: str,
               names):
    self.node, self.module, self.names = node, module, names
    self.d = Definition(name=node.name, framework=FRAMEWORK, file=path, line=node.lineno,
                        original=node.name)
    self.tr = fs.Translation(self.d, TABLE, tree, module, names,
                             translate.module_functions(tree))

  def definition(self) -> Definition:
    d, node = self.d, self.node
    grad, ret = self._grad_and_return()
    if grad is None:
      return d
    if grad.args.kwonlyargs or grad.args.kwarg or any(
        a.arg == "variables" for a in grad.args.args):
      d.refuse(grad.lineno, f"def {grad.name}", VARIABLES)
      return d
    sample = fs.sample_of(self.module, d.name)
    names = fs.arguments(d, node, sample)
    if names is None:
      return d
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    fs.count_outputs(d, getattr(self.module, d.name, None), sample, tf.constant)
    if d.refused:
      return d
    residuals = self._residuals(grad, names)
    body = [s for s in node.body if s is not grad and s is not ret]
    scope = self._forward(body, ret, residuals)
    python = [r for r in residuals if r not in scope.arrays]
    prefix = self._recomputed(python, body, scope.arrays) if python else []
    if prefix is None:
      d.refuse(grad.lineno, f"def {grad.name}", f"the grad reads Python values the "
               f"forward computes from arrays ({', '.join(python)}): only arrays carry "
               "over as residuals")
    elif python:  # Python values of parameters and constants: recomputed by the backward.
      residuals = [r for r in residuals if r not in python]
      self._forward(body, ret, residuals)
    d.residuals = tuple(residuals)
    self._backward(grad, residuals, names, prefix or [])
    return self.tr.finish()

  def _forward(self, body: list[ast.stmt], ret: ast.Return, residuals: list[str]):
    back = ast.Return(ast.Tuple([ret.value.elts[0], fs.expr(
        "(" + "".join(f"{r}, " for r in residuals) + ")")], ast.Load()))
    body = body + [ast.fix_missing_locations(ast.copy_location(back, ret))]
    return self._translate(self.node, set(self.d.inputs), "forward", self.d.inputs, body,
                           (), "forward")

  @staticmethod
  def _recomputed(python: list[str], body: list[ast.stmt], arrays) -> list[ast.stmt] | None:
    """The forward's assignments of the Python values ``python`` (and those they read),
    for the backward to run again; None where one reads an array or is not a plain
    assignment."""
    needed, kept = set(python), []
    for stmt in reversed(body):
      stored = _stored([stmt])
      if not stored & needed:
        continue
      reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)
               and isinstance(n.ctx, ast.Load)}
      if not isinstance(stmt, ast.Assign) or reads & set(arrays):
        return None
      needed |= reads
      kept.append(stmt)
    return kept[::-1]

  def _grad_and_return(self):
    """The nested grad function and the final ``return y, grad`` (None: refused)."""
    d, node = self.d, self.node
    ret = node.body[-1] if node.body else None
    if (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)
        and len(ret.value.elts) == 2 and isinstance(ret.value.elts[1], ast.Lambda)):
      return _lambda_grad(ret.value.elts[1], ret), ret
    if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)
            and len(ret.value.elts) == 2 and isinstance(ret.value.elts[1], ast.Name)):
      d.refuse(getattr(ret, "lineno", node.lineno), ast.unparse(ret) if ret else node.name,
               "a tf.custom_gradient function must end with return outputs, grad "
               "(grad a nested function or a lambda)")
      return None, None
    name = ret.value.elts[1].id
    grad = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == name),
                None)
    if grad is None:
      d.refuse(ret.lineno, ast.unparse(ret), f"{name} is not a function defined in the body")
      return None, None
    others = [s for s in node.body if isinstance(s, ast.FunctionDef) and s is not grad]
    for s in others:
      d.refuse(s.lineno, f"def {s.name}", "a nested function besides the grad")
    if others:
      return None, None
    return grad, ret

  def _residuals(self, grad: ast.FunctionDef, names: list[str]) -> list[str]:
    """The forward's names the grad reads, in order of first reading (params excluded:
    the backward gets them as parameters)."""
    own = {a.arg for a in grad.args.args} | _stored(grad.body)
    if grad.args.vararg:
      own.add(grad.args.vararg.arg)
    outer = set(names) | _stored([s for s in self.node.body if s is not grad])
    found = []
    for n in ast.walk(ast.Module(grad.body, [])):
      if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in outer
          and n.id not in own and n.id not in self.d.params and n.id not in found):
        found.append(n.id)
    return found

  def _backward(self, grad: ast.FunctionDef, residuals: list[str], names: list[str],
                prefix: list[ast.stmt]) -> None:
    d = self.d
    args = [a.arg for a in grad.args.args]
    preamble = ["(" + "".join(f"{r}, " for r in residuals) + ") = residuals"] if residuals else []
    n = d.num_outputs
    if grad.args.vararg:
      if args:
        d.refuse(grad.lineno, f"def {grad.name}", "grad takes named and *grad_ys arguments")
        return
      preamble.append(f"{grad.args.vararg.arg} = " + ("(g,)" if n == 1 else "g"))
      own = {grad.args.vararg.arg}
    elif len(args) == n:
      preamble.append(("(" + "".join(f"{a}, " for a in args) + ") = g") if n > 1
                      else f"{args[0]} = g")
      own = set(args)
    else:
      d.refuse(grad.lineno, f"def {grad.name}", f"grad takes {len(args)} upstream "
               f"gradients, the function returns {n} outputs")
      return
    body = fs.Returns(lambda v, node: fs.cotangents(d, v, node, names)).block(
        prefix + grad.body)
    d.nondiff = fs.always_none(d, grad.body, names)
    arrays = set(residuals) | own | {"g", "residuals"}
    self._translate(grad, arrays, "backward", ["residuals", "g"], body, preamble,
                    "backward")
    d.backward_line = grad.lineno

  def _translate(self, fn, arrays, name, params, body, preamble, field) -> translate.Scope:
    source, scope = self.tr.function(fn, arrays, name, params, body, preamble)
    setattr(self.d, f"{field}_source", source)
    return scope
