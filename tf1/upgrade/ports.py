"""``--port``: a module of `crossgrad.tf1.port` ops next to an upgraded file, one per
override it found (op-type overrides and Defuns become native ops, py_func pairs host
ops), and the command that checks each: ``crossgrad-port-check`` against the
`tf.compat.v1` graph for a py_func pair, the cross-check for the others."""

from __future__ import annotations

import ast
import os
import re

from crossgrad.tf1.op_types import OP_TYPES
from crossgrad.tf1.upgrade.report import FileResult

_HOST_NAMES = frozenset({"np", "numpy", "math"})
_HEADER = '''"""crossgrad ports of the TF1 gradient overrides in {file} (crossgrad-upgrade --port).

A legacy gradient is its own specification (gradient="declared"): the cross-check compares
the TF, JAX and NumPy versions with each other, and crossgrad-port-check compares a py_func
pair with the tf.compat.v1 graph. Where a gradient is the forward's derivative, make it
gradient="exact" to check it against finite differences too. Samples draw standard normal
(3, 4) arrays: change them where an op needs other shapes or integer inputs.

  python -m crossgrad.check --module={ports} --ops={ops}
"""

import os
import sys

import numpy as np

from crossgrad import tf1
from crossgrad.checker import selection

# The upgraded module: the one already imported (its gradients are registered once), else
# loaded from the file next to this one.
_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), {file!r})
legacy = next((m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == _PATH),
              None) or selection.load_module(_PATH)
'''


def _top_names(tree: ast.Module) -> set[str]:
  found = set()
  for node in tree.body:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
      found.add(node.name)
    elif isinstance(node, ast.Assign):
      found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
  return found


def _free_names(node: ast.Lambda) -> set[str]:
  params = {a.arg for a in node.args.args}
  return {n.id for n in ast.walk(node.body) if isinstance(n, ast.Name)} - params


def _forward(node: ast.AST, top: set[str]) -> str | None:
  """The forward as ports-module code: ``legacy.f``, ``np.square`` or a NumPy lambda."""
  if isinstance(node, ast.Name) and node.id in top:
    return f"legacy.{node.id}"
  if isinstance(node, ast.Attribute) and ast.unparse(node).split(".")[0] in _HOST_NAMES:
    return ast.unparse(node)
  if isinstance(node, ast.Lambda) and _free_names(node) <= _HOST_NAMES:
    return ast.unparse(node)
  return None


def _called(call: ast.Call) -> str:
  return getattr(call.func, "attr", getattr(call.func, "id", ""))


def _registered(tree: ast.Module) -> set[str]:
  """Names the module registers with RegisterGradient when it is imported."""
  found = set()
  for node in tree.body:
    calls = list(getattr(node, "decorator_list", ()))
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
      calls.append(node.value.func)  # RegisterGradient("name")(fn)
    for call in calls:
      if (isinstance(call, ast.Call) and _called(call) == "RegisterGradient" and call.args
          and isinstance(call.args[0], ast.Constant)):
        found.add(call.args[0].value)
  return found


def _grad(node: ast.AST, top: set[str], registered: set[str]) -> str | None:
  """The gradient as ports-module code: ``legacy.g``, or a name TF registers (the op types'
  own gradients, "Identity") or the module registers on import."""
  if isinstance(node, ast.Name) and node.id in top:
    return f"legacy.{node.id}"
  if isinstance(node, ast.Constant) and node.value in set(OP_TYPES) | registered:
    return repr(node.value)
  return None


def _label(text: str) -> str:
  return re.sub(r"\W+", "_", text.removeprefix("legacy.").removeprefix("np.")).strip("_").lower()


def _sample(n_inputs: int) -> str:
  """A ``sample=`` argument drawing ``n_inputs`` standard normal (3, 4) arrays."""
  return f",\n    sample=lambda rng: tuple(rng.standard_normal((3, 4)) for _ in range({n_inputs}))"


def candidates(source: str, helpers: set[str]) -> list[tuple[str, str, dict]]:
  """(label, port arguments as code, port_check arguments or {}) for each override."""
  tree = ast.parse(source)
  top, registered, found = _top_names(tree), _registered(tree), []
  for node in tree.body:
    decorators = node.decorator_list if isinstance(node, ast.FunctionDef) else []
    if any(isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "Defun"
           and any(k.arg == "python_grad_func" for k in d.keywords) for d in decorators):
      defun = next(d for d in decorators if isinstance(d, ast.Call) and _called(d) == "Defun")
      found.append((node.name, f"legacy.{node.name}{_sample(len(defun.args))}", {}))
  for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
    name = _called(call)
    if name == "override_map" and call.args and isinstance(call.args[0], ast.Dict):
      for key, value in zip(call.args[0].keys, call.args[0].values):
        grad = _grad(value, top, registered)
        if isinstance(key, ast.Constant) and key.value in OP_TYPES and grad:
          found.append((f"{key.value.lower()}_{_label(grad)}", f"{key.value!r}, {grad}", {}))
    grad_kw = next((k.value for k in call.keywords if k.arg == "grad"), None)
    if grad_kw is not None and (name == "py_func" or name in helpers) and call.args:
      forward, grad = _forward(call.args[0], top), _grad(grad_kw, top, registered)
      tout = call.args[2] if len(call.args) > 2 else None
      outputs = len(tout.elts) if isinstance(tout, (ast.List, ast.Tuple)) else 1
      if forward and grad and not grad.startswith("'"):
        check = {"forward": forward.removeprefix("legacy."), "grad": grad[len("legacy."):],
                 "num_outputs": outputs} if not forward.startswith("lambda") else {}
        inputs = call.args[1] if len(call.args) > 1 else None
        extra = f", num_outputs={outputs}" if outputs > 1 else ""
        extra += _sample(len(inputs.elts)) if isinstance(inputs, (ast.List, ast.Tuple)) else ""
        found.append((_label(forward) if not forward.startswith("lambda") else "lambda",
                      f"{forward}, {grad}{extra}", check))
  return found


def write(result: FileResult, target: str) -> None:
  """Writes ``<target>_ports.py`` (where ``target`` has overrides to port) and adds the
  check command of each port to ``result.commands``."""
  stem = os.path.splitext(os.path.basename(target))[0]
  ports_path = os.path.join(os.path.dirname(target), f"{stem}_ports.py")
  stem = re.sub(r"\W+", "_", stem).lower()
  lines, seen, names = [], set(), set()
  for label, args, check in candidates(result.source, result.helpers):
    if args in seen:
      continue
    seen.add(args)
    name, n = f"{stem}_{label}", 2
    while name in names:
      name, n = f"{stem}_{label}{n}", n + 1
    names.add(name)
    lines.append(f"{name.upper()} = tf1.port(\n    {name!r}, {args}, gradient=\"declared\")")
    if check:
      flags = f"--forward={check['forward']} --grad={check['grad']}"
      if check["num_outputs"] > 1:
        flags += f" --num_outputs={check['num_outputs']}"
      result.commands.append(f"python -m crossgrad.tf1.port_check --module={target} {flags}")
    else:
      result.commands.append(f"python -m crossgrad.check --module={ports_path} --ops={name}")
  if not lines:
    return
  header = _HEADER.format(file=os.path.basename(target), ports=ports_path,
                         ops=",".join(sorted(names)))
  with open(ports_path, "w", encoding="utf-8") as f:
    f.write(header + "\n" + "\n".join(lines) + "\n")
  result.ports_path = ports_path
