"""What the JAX and TensorFlow source modules share: definitions that are decorated
functions (``jax.custom_vjp``, ``jax.custom_jvp``, ``tf.custom_gradient``), their samples,
their outputs, and the rewrites of their returns into the op language's protocol."""

from __future__ import annotations

import ast
import copy
from typing import Any, Callable, Sequence

import numpy as np

from crossgrad.port import definition, translate
from crossgrad.port.definition import REQUIRED, Definition, sample_mismatch, split_arguments


def sample_of(module: Any, name: str) -> tuple | None:
  """The module's ``SAMPLES[name]`` drawn once (seed 0), or None."""
  samples = definition.samples(module)  # A --samples file's entries first.
  if name not in samples:
    return None
  return tuple(samples[name](np.random.default_rng(0)))


def arguments(d: Definition, fn: ast.FunctionDef, sample: tuple | None) -> list[str] | None:
  """The names ``fn`` takes, with ``d``'s inputs and params set from the sample; None
  (and a refusal) where they cannot be read."""
  args = fn.args
  if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
    d.refuse(fn.lineno, f"def {fn.name}", "the function takes *args, **kwargs, positional- "
             "or keyword-only arguments: the inputs must be named")
    return None
  names = [a.arg for a in args.args]
  defaults = {}
  for name, node in zip(names[len(names) - len(args.defaults):], args.defaults):
    try:
      defaults[name] = ast.literal_eval(node)
    except ValueError:
      pass
  mismatch = sample_mismatch(names, sample, defaults)
  if mismatch:
    d.refuse(fn.lineno, "SAMPLES", f"{mismatch}, {fn.name} takes {len(names)} "
             f"({', '.join(names)})")
    return None
  d.inputs, d.params, d.sample_params = split_arguments(names, sample, defaults)
  d.call_order = tuple(names)
  if sample is None:
    d.notes.append("no SAMPLES entry: arguments without a Python default are read as arrays")
  return names


def count_outputs(d: Definition, call: Callable[..., Any], sample: tuple | None,
                  convert: Callable[[np.ndarray], Any]) -> None:
  """Runs the original once on its sample: ``d.num_outputs`` from what it returns."""
  if sample is None or call is None:
    return
  try:
    out = call(*[convert(a) if isinstance(a, np.ndarray) else a for a in sample])
  except Exception as e:  # pylint: disable=broad-except
    d.refuse(d.line, f"{d.original}(*SAMPLES[{d.name!r}])",
             f"the original raised on its sample: {type(e).__name__}: {e}"[:300])
    return
  d.num_outputs = len(out) if isinstance(out, (tuple, list)) else 1


def keywords(d: Definition) -> dict[str, str]:
  """The op functions' keyword-only parameters: ``d``'s params with their defaults."""
  return {k: repr(None if v is REQUIRED else v) for k, v in d.params.items()}


def renames(own: Sequence[str], canonical: Sequence[str]) -> list[str]:
  """Preamble lines binding a function's own argument names to the definition's."""
  return [f"{a} = {b}" for a, b in zip(own, canonical) if a != b]


def undecorated(fn: ast.FunctionDef) -> ast.FunctionDef:
  """``fn`` without its decorators (the plain function a definition calls as a helper)."""
  new = copy.copy(fn)
  new.decorator_list = []
  return new


class Translation:
  """A definition's functions translated with one table, helpers and constants shared."""

  def __init__(self, d: Definition, table: translate.Table, tree: ast.Module, module: Any,
               names, helpers: dict[str, ast.FunctionDef]):
    self.d, self.table, self.names, self.helpers = d, table, names, helpers
    self.constants = translate.module_constants(tree, module)
    self.helper_sources: dict[str, str] = {}
    self.used_constants: set[str] = set()

  def function(self, fn: ast.FunctionDef, arrays, name: str, params, body,
               preamble=()) -> tuple[str, translate.Scope]:
    """``def name(xp, *params, *, <d's params>)`` with ``preamble`` lines, then ``body``
    translated; its source and scope (refusals go to ``d``)."""
    scope = translate.Scope(self.table, self.names, arrays=set(arrays), helpers=self.helpers,
                            constants=dict(self.constants),
                            helper_sources=self.helper_sources)
    scope.bound |= {n.id for line in preamble for n in ast.walk(ast.parse(line))
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    source = translate.translate_function(fn, scope, name=name, params=params,
                                          keyword_params=keywords(self.d), body=body,
                                          preamble=preamble)
    self.d.refusals += scope.refusals
    self.used_constants |= scope.used_constants
    return source, scope

  def finish(self) -> Definition:
    """``d`` with the helpers and constants its functions used."""
    self.d.helpers = tuple(s for s in self.helper_sources.values() if s)
    self.d.constants = {k: self.constants[k] for k in sorted(self.used_constants)}
    return self.d


class Returns(ast.NodeTransformer):
  """Each ``return`` rewritten by ``rewrite(value_node) -> new value node`` (nested
  functions left alone)."""

  def __init__(self, rewrite: Callable[[ast.expr | None, ast.Return], ast.expr]):
    self.rewrite = rewrite

  def block(self, body: Sequence[ast.stmt]) -> list[ast.stmt]:
    return [self.visit(copy.deepcopy(s)) for s in body]

  def visit_Return(self, node: ast.Return):
    new = ast.Return(self.rewrite(node.value, node))
    return ast.fix_missing_locations(ast.copy_location(new, node))

  def visit_FunctionDef(self, node):
    return node


def always_none(d: Definition, body: Sequence[ast.stmt], names: Sequence[str]) -> tuple:
  """The inputs of ``d`` whose cotangent is a literal None in every ``return`` of a
  backward ``body`` returning one value per name of ``names``: non-differentiable."""
  none = set(d.inputs)

  def record(value, node):
    elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
    if len(elts) != len(names):
      none.clear()
    for n, e in zip(names, elts):
      if not (isinstance(e, ast.Constant) and e.value is None):
        none.discard(n)
    return value

  Returns(record).block(body)
  return tuple(n for n in d.inputs if n in none)


def expr(src: str) -> ast.expr:
  return ast.parse(src, mode="eval").body


def cotangents(d: Definition, value: ast.expr | None, node: ast.AST,
               names: Sequence[str]) -> ast.expr:
  """A backward's ``return`` of one cotangent per name of ``names`` (a tuple, or one
  value for one name) as the op's: one per input, in ``d.inputs`` order."""
  elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
  if elts is None and len(names) == 1:
    elts = [value]
  if elts is None:
    if list(names) == list(d.inputs):
      return value  # A tuple at run time, one per input already.
    d.refuse(node.lineno, ast.unparse(node), f"the gradient must return {len(names)} "
             f"cotangents as a tuple ({', '.join(names)})")
    return value
  if len(elts) != len(names) or any(isinstance(e, ast.Starred) for e in elts):
    d.refuse(node.lineno, ast.unparse(node), f"the gradient returns {len(elts)} values, "
             f"one per argument is {len(names)} ({', '.join(names)})")
    return value
  return ast.Tuple([e for n, e in zip(names, elts) if n in d.inputs], ast.Load())
