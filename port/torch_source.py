"""``torch.autograd.Function`` subclasses in a source module, as `Definition`s.

Both styles: ``forward(ctx, *args)``, and ``forward(*args)`` with ``setup_context(ctx,
inputs, output)`` (its body runs after the forward, on the forward's inputs and output).
The ctx protocol becomes plain names before translation: ``ctx.save_for_backward(...)``
the residuals, ``ctx.saved_tensors`` their unpacking, an attribute ``ctx.a`` a residual
``_ctx_a`` (a Python value stays one: a static residual), ``ctx.needs_input_grad`` a
tuple of constants (True for array inputs), ``mark_non_differentiable`` zero cotangents
for those outputs. The backward's gradients for non-array arguments (None) are dropped;
an array input whose gradient is always None is non-differentiable.

The modes the original cannot run in are declared on its kernel: without
``setup_context``, no ``torch.func`` transforms (vmap, forward mode); without a ``jvp``
staticmethod, no forward mode; without ``vmap`` or ``generate_vmap_rule``, no vmap; with
``@once_differentiable``, no second order.
"""

from __future__ import annotations

import ast
import copy
from typing import Any, Sequence

import numpy as np

from crossgrad.port import definition, translate
from crossgrad.port.definition import REQUIRED, Definition, sample_mismatch, split_arguments
from crossgrad.port.tables.torch import TABLE

FRAMEWORK = "torch"
_FUNCTION = ("torch.autograd.Function", "torch.autograd.function.Function")
_SAVED = ("saved_tensors", "saved_variables")
_DROPPED = ("set_materialize_grads", "mark_dirty")
_NO_FUNC = ("an autograd.Function without setup_context cannot run under torch.func "
            "transforms")


def find(tree: ast.Module, module: Any, path: str) -> list[Definition]:
  """The module's ``torch.autograd.Function`` subclasses (top level), translated."""
  names = translate.aliases(tree)
  found = []
  for node in tree.body:
    if isinstance(node, ast.ClassDef) and any(
        translate.dotted(b, names) in _FUNCTION for b in node.bases):
      found.append(_Port(node, tree, module, path, names).definition())
  return found


def sample_of(module: Any, name: str) -> tuple | None:
  """The module's ``SAMPLES[name]`` drawn once (seed 0), or None."""
  samples = definition.samples(module)
  if name not in samples:
    return None
  return tuple(samples[name](np.random.default_rng(0)))


class _Port:
  """One class's translation (`definition`)."""

  def __init__(self, node: ast.ClassDef, tree: ast.Module, module: Any, path: str,
               names: dict[str, str]):
    self.node, self.tree, self.module, self.names = node, tree, module, names
    self.methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    self.d = Definition(name=node.name, framework=FRAMEWORK, file=path, line=node.lineno,
                        original=f"{node.name}.apply")
    self.constants = translate.module_constants(tree, module)
    self.helpers = translate.module_functions(tree)
    self.helper_sources: dict[str, str] = {}
    self.used_constants: set[str] = set()

  def definition(self) -> Definition:
    d = self.d
    forward, backward = self.methods.get("forward"), self.methods.get("backward")
    setup = self.methods.get("setup_context")
    if forward is None or backward is None:
      d.refuse(self.node.lineno, f"class {self.node.name}",
               "no forward or no backward staticmethod")
      return d
    args = forward.args
    if args.vararg or args.kwarg or args.kwonlyargs:
      d.refuse(forward.lineno, "def forward", "forward takes *args, **kwargs or keyword-only "
               "arguments: the inputs must be named")
      return d
    names = [a.arg for a in args.posonlyargs + args.args]
    if setup is None:
      names = names[1:]  # ctx
    defaults = _defaults(args, names)
    sample = sample_of(self.module, self.node.name)
    mismatch = sample_mismatch(names, sample, defaults)
    if mismatch:
      d.refuse(forward.lineno, "SAMPLES", f"{mismatch}, forward takes {len(names)} "
               f"({', '.join(names)})")
      return d
    d.inputs, d.params, d.sample_params = split_arguments(names, sample, defaults)
    d.call_order = tuple(names)
    if sample is None:
      d.notes.append("no SAMPLES entry: arguments without a Python default are read as "
                     "arrays")
    self.outputs = self._outputs(sample)
    self._forward(forward, setup)
    self._backward(backward)
    d.unsupported_modes = self._unsupported(backward, setup)
    d.helpers = tuple(s for s in self.helper_sources.values() if s)
    d.constants = {k: self.constants[k] for k in sorted(self.used_constants)}
    return d

  # The original, run once on the sample: its outputs' count and dtypes.

  def _outputs(self, sample: tuple | None) -> list[np.dtype] | None:
    if sample is None:
      return None
    import torch  # pylint: disable=g-import-not-at-top
    fn = getattr(self.module, self.node.name, None)
    if fn is None:
      return None
    args = [torch.from_numpy(np.array(a)) if isinstance(a, np.ndarray) else a
            for a in sample]
    try:
      out = fn.apply(*args)
    except Exception as e:  # pylint: disable=broad-except
      self.d.refuse(self.node.lineno, f"{self.node.name}.apply(*SAMPLES[...])",
                    f"the original raised on its sample: {type(e).__name__}: {e}"[:300])
      return None
    outs = out if isinstance(out, tuple) else (out,)
    self.d.num_outputs = len(outs) if isinstance(out, tuple) else 1
    return [np.dtype(str(o.dtype).removeprefix("torch.")) for o in outs]

  # Forward: the ctx protocol as names, then the translation.

  def _forward(self, forward: ast.FunctionDef, setup: ast.FunctionDef | None) -> None:
    d = self.d
    self.saved, self.attrs, self.nondiff_outputs = None, [], []
    body = list(forward.body)
    if setup is None:
      ctx = forward.args.args[0].arg if forward.args.args else "ctx"
      body = self._ctx_forward(body, ctx)
    else:
      s_args = [a.arg for a in setup.args.args]
      if len(s_args) != 3:
        d.refuse(setup.lineno, "def setup_context", "setup_context must take (ctx, inputs, "
                 "output)")
        return
      captured = [ast.copy_location(ast.parse(f"_in_{n} = {n}").body[0], forward)
                   for n in d.call_order]  # The inputs as passed, before the body runs.
      setup_body = self._ctx_forward(list(setup.body), s_args[0])
      body = captured + _with_setup(body, setup_body, s_args[1], s_args[2], d.call_order)
    n_saved = len(self.saved) if self.saved is not None else 0
    residuals = "(" + ("*_saved, " if n_saved else "") + "".join(
        f"_ctx_{a}, " for a in self.attrs) + ")"
    body = _ReturnWithResiduals(residuals).visit_block(body)
    if n_saved and not any(isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "_saved"
                           for s in body):  # Saved on a branch: nothing saved elsewhere.
      body.insert(0, ast.copy_location(ast.parse("_saved = ()").body[0], forward))
    scope = self._scope(arrays=set(d.inputs))
    d.forward_source = translate.translate_function(
        forward, scope, name="forward", params=d.inputs, keyword_params=self._keywords(),
        body=body)
    self.attr_arrays = {a for a in self.attrs if f"_ctx_{a}" in scope.arrays}
    self._collect(scope)
    d.residuals = tuple(self.saved or ()) + tuple(f"ctx.{a}" for a in self.attrs)

  def _ctx_forward(self, body: list[ast.stmt], ctx: str) -> list[ast.stmt]:
    """``body`` with the ctx calls and attribute writes as plain statements."""
    out = []
    for stmt in body:
      out += self._ctx_statement(stmt, ctx)
    return out

  def _ctx_statement(self, stmt: ast.stmt, ctx: str) -> list[ast.stmt]:
    d = self.d
    call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
    method = _ctx_attr(call.func, ctx) if call is not None else None
    if method == "save_for_backward":
      if self.saved is not None or any(isinstance(a, ast.Starred) for a in call.args):
        d.refuse(stmt.lineno, ast.unparse(call), "save_for_backward called more than once "
                 "or with *args: the residuals must be a fixed list")
        return []
      self.saved = [ast.unparse(a) for a in call.args]
      new = ast.Assign([ast.Name("_saved", ast.Store())],
                       ast.Tuple(list(call.args), ast.Load()))
      return [ast.fix_missing_locations(ast.copy_location(new, stmt))]
    if method == "mark_non_differentiable":
      self.nondiff_outputs += [ast.unparse(a) for a in call.args]
      return []
    if method in _DROPPED:
      return []
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and (
        attr := _ctx_attr(stmt.targets[0], ctx)):
      if attr not in self.attrs:
        self.attrs.append(attr)
      new = ast.Assign([ast.Name(f"_ctx_{attr}", ast.Store())], _NeedsGrad(
          ctx, self._needs_grad(), d).visit(stmt.value))
      return [ast.fix_missing_locations(ast.copy_location(new, stmt))]
    for n in ast.walk(stmt):
      if _ctx_attr(n, ctx):
        d.refuse(getattr(n, "lineno", stmt.lineno), ast.unparse(n),
                 f"{ast.unparse(n)} in the forward has no translation")
        return []
    if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With)):
      stmt = copy.copy(stmt)
      stmt.body = self._ctx_forward(stmt.body, ctx)
      if getattr(stmt, "orelse", None):
        stmt.orelse = self._ctx_forward(stmt.orelse, ctx)
    return [stmt]

  def _needs_grad(self) -> str:
    return "(" + "".join(f"{n in self.d.inputs}, " for n in self.d.call_order) + ")"

  # Backward.

  def _backward(self, backward: ast.FunctionDef) -> None:
    d = self.d
    d.backward_line = backward.lineno
    args = backward.args
    ctx = args.args[0].arg if args.args else "ctx"
    grads = [a.arg for a in args.args[1:]]
    preamble = []
    n_saved = len(self.saved) if self.saved is not None else 0
    if n_saved:
      preamble.append(f"_saved = residuals[:{n_saved}]")
    if self.attrs:
      preamble.append("".join(f"_ctx_{a}, " for a in self.attrs)
                      + (f"= residuals[{n_saved}:]" if n_saved else "= residuals"))
    n_out = d.num_outputs
    if args.vararg:
      preamble.append(f"{args.vararg.arg} = {'(g,)' if n_out == 1 else 'g'}")
      grads = [f"{args.vararg.arg}[{k}]" for k in range(n_out)]
    elif len(grads) == 1 and n_out == 1:
      if grads[0] != "g":
        preamble.append(f"{grads[0]} = g")
    elif len(grads) == n_out:
      preamble.append("".join(f"{g}, " for g in grads) + "= g")
    else:
      d.refuse(backward.lineno, "def backward", f"backward takes {len(grads)} gradients, "
               f"the forward returns {n_out} outputs")
      return
    for k in self._nondiff_output_positions():
      if self.outputs is None or self.outputs[k].kind in "fc":
        preamble.append(f"{grads[k]} = xp.zeros_like({grads[k]})")
    body = _BackwardCtx(ctx, self._needs_grad(), d).visit_block(backward.body)
    returns = _Returns(d.call_order, d.inputs, d)
    body = returns.visit_block(body)
    grad_names = {args.vararg.arg} if args.vararg else set(grads)
    arrays = {"g", "residuals", *grad_names, "_saved"} | {f"_ctx_{a}" for a in self.attr_arrays}
    scope = self._scope(arrays=arrays)
    scope.bound |= {"_saved", *(f"_ctx_{a}" for a in self.attrs), *grad_names}
    d.backward_source = translate.translate_function(
        backward, scope, name="backward", params=["residuals", "g"],
        keyword_params=self._keywords(), body=body, preamble=preamble)
    self._collect(scope)
    int_inputs = set()
    sample = sample_of(self.module, d.name)
    if sample is not None:
      int_inputs = {n for n, v in zip(d.call_order, sample)
                    if isinstance(v, np.ndarray) and v.dtype.kind not in "fc"}
    d.nondiff = tuple(n for n in d.inputs if n in returns.always_none or n in int_inputs)

  def _nondiff_output_positions(self) -> list[int]:
    returned = _returned_names(self.methods["forward"])
    return [returned.index(n) for n in self.nondiff_outputs if n in returned]

  # Shared.

  def _scope(self, arrays: set[str]) -> translate.Scope:
    return translate.Scope(TABLE, self.names, arrays=arrays, helpers=self.helpers,
                           constants=dict(self.constants), helper_sources=self.helper_sources)

  def _keywords(self) -> dict[str, str]:
    return {k: repr(None if v is REQUIRED else v) for k, v in self.d.params.items()}

  def _collect(self, scope: translate.Scope) -> None:
    self.d.refusals += scope.refusals
    self.used_constants |= scope.used_constants

  def _unsupported(self, backward: ast.FunctionDef,
                   setup: ast.FunctionDef | None) -> dict[str, str]:
    modes = {}
    if setup is None:
      modes["vmap"] = modes["jvp"] = modes["batched_vjp"] = _NO_FUNC
    else:
      if "jvp" not in self.methods:
        modes["jvp"] = "the original defines no jvp staticmethod (forward mode)"
      generate = any(isinstance(s, ast.Assign) and any(
          getattr(t, "id", "") == "generate_vmap_rule" for t in s.targets)
          and getattr(s.value, "value", False) is True for s in self.node.body)
      if "vmap" not in self.methods and not generate:
        modes["vmap"] = ("the original defines no vmap staticmethod and no "
                         "generate_vmap_rule")
    if any("once_differentiable" in ast.unparse(dec) for dec in backward.decorator_list):
      modes["second_order"] = "the original's backward is @once_differentiable"
    return modes


def _defaults(args: ast.arguments, names: Sequence[str]) -> dict[str, Any]:
  positional = [a.arg for a in args.posonlyargs + args.args]
  found = {}
  for name, node in zip(positional[len(positional) - len(args.defaults):], args.defaults):
    try:
      found[name] = ast.literal_eval(node)
    except ValueError:
      pass
  return {k: v for k, v in found.items() if k in names}


def _ctx_attr(node: ast.AST, ctx: str) -> str | None:
  """``attr`` for ``ctx.attr``, else None."""
  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
      node.value.id == ctx):
    return node.attr
  return None


def _returned_names(fn: ast.FunctionDef) -> list[str]:
  for node in ast.walk(fn):
    if isinstance(node, ast.Return) and node.value is not None:
      value = node.value
      elts = value.elts if isinstance(value, ast.Tuple) else [value]
      return [ast.unparse(e) for e in elts]
  return []


def _with_setup(body: list[ast.stmt], setup: list[ast.stmt], inputs: str,
                output: str, names: Sequence[str]) -> list[ast.stmt]:
  """The forward's body with each ``return v`` as ``_out = v``, setup_context's body (on
  ``inputs`` = the forward's inputs as passed, ``output`` = ``_out``), ``return _out``."""
  captured = "(" + "".join(f"_in_{n}, " for n in names) + ")"

  class Rewrite(ast.NodeTransformer):
    def visit_Return(self, node: ast.Return):
      rename = {inputs: captured, output: "_out"}
      steps = [ast.Assign([ast.Name("_out", ast.Store())], node.value or ast.Constant(None))]
      steps += [_Renamed(rename).visit(copy.deepcopy(s)) for s in setup]
      steps.append(ast.Return(ast.Name("_out", ast.Load())))
      return [ast.fix_missing_locations(ast.copy_location(s, node)) for s in steps]

    def visit_FunctionDef(self, node):
      return node

  return [s for stmt in body for s in _as_list(Rewrite().visit(copy.deepcopy(stmt)))]


def _as_list(value) -> list:
  return value if isinstance(value, list) else [value]


class _Renamed(ast.NodeTransformer):
  def __init__(self, names: dict[str, str]):
    self.names = names

  def visit_Name(self, node: ast.Name):
    if node.id in self.names:
      new = ast.parse(self.names[node.id], mode="eval").body
      return ast.copy_location(new, node)
    return node


class _ReturnWithResiduals(ast.NodeTransformer):
  """``return v`` -> ``return v, <residuals>``."""

  def __init__(self, residuals: str):
    self.residuals = residuals

  def visit_block(self, body: list[ast.stmt]) -> list[ast.stmt]:
    return [self.visit(copy.deepcopy(s)) for s in body]

  def visit_Return(self, node: ast.Return):
    value = node.value or ast.Constant(None)
    new = ast.Return(ast.Tuple([value, ast.parse(self.residuals, mode="eval").body],
                               ast.Load()))
    return ast.fix_missing_locations(ast.copy_location(new, node))

  def visit_FunctionDef(self, node):
    return node


class _NeedsGrad(ast.NodeTransformer):
  """``ctx.needs_input_grad[k]`` -> its constant (True for array inputs)."""

  def __init__(self, ctx: str, needs: str, d: Definition):
    self.ctx, self.needs, self.d = ctx, needs, d

  def visit_Subscript(self, node: ast.Subscript):
    if _ctx_attr(node.value, self.ctx) == "needs_input_grad" and isinstance(
        node.slice, ast.Constant) and isinstance(node.slice.value, int):
      values = ast.literal_eval(self.needs)
      k = node.slice.value
      return ast.copy_location(ast.Constant(values[k] if -len(values) <= k < len(values)
                                            else False), node)
    return self.generic_visit(node)

  def visit_Attribute(self, node: ast.Attribute):
    if _ctx_attr(node, self.ctx) == "needs_input_grad":
      return ast.copy_location(ast.parse(self.needs, mode="eval").body, node)
    return self.generic_visit(node)


class _BackwardCtx(_NeedsGrad):
  """The backward's ctx reads as names: saved tensors, attributes, needs_input_grad."""

  def visit_block(self, body: list[ast.stmt]) -> list[ast.stmt]:
    return [ast.fix_missing_locations(self.visit(copy.deepcopy(s))) for s in body]

  def visit_Attribute(self, node: ast.Attribute):
    attr = _ctx_attr(node, self.ctx)
    if attr is None or attr == "needs_input_grad":
      return super().visit_Attribute(node)
    if attr in _SAVED:
      return ast.copy_location(ast.Name("_saved", ast.Load()), node)
    return ast.copy_location(ast.Name(f"_ctx_{attr}", ast.Load()), node)


class _Returns(ast.NodeTransformer):
  """``return gx, None, gw`` (one per argument) -> ``return (gx, gw)`` (one per input);
  records the inputs whose gradient is a literal None in every return."""

  def __init__(self, call_order: Sequence[str], inputs: Sequence[str], d: Definition):
    self.call_order, self.inputs, self.d = list(call_order), list(inputs), d
    self.always_none = set(inputs)

  def visit_block(self, body: list[ast.stmt]) -> list[ast.stmt]:
    return [self.visit(s) for s in body]

  def visit_FunctionDef(self, node):
    return node

  def visit_Return(self, node: ast.Return):
    value = node.value
    n = len(self.call_order)
    elts = value.elts if isinstance(value, ast.Tuple) else None
    if elts is None and n == 1:
      elts = [value]
    if elts is None or len(elts) != n or any(isinstance(e, ast.Starred) for e in elts):
      if elts is None and len(self.inputs) == n:
        self.always_none.clear()
        return node  # One gradient per argument, all of them inputs: as it is.
      self.d.refuse(node.lineno, ast.unparse(node), f"the backward must return {n} "
                    f"gradients, one per forward argument ({', '.join(self.call_order)})")
      return node
    kept = []
    for name, e in zip(self.call_order, elts):
      if name in self.inputs:
        kept.append(e)
        if not (isinstance(e, ast.Constant) and e.value is None):
          self.always_none.discard(name)
    new = ast.Return(ast.Tuple(kept, ast.Load()))
    return ast.fix_missing_locations(ast.copy_location(new, node))

