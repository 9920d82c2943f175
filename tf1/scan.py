r"""Lists the TF1 gradient overrides in a source tree, what replaces each, and what is
already migrated to `crossgrad.tf1`.

  python -m crossgrad.tf1.scan PATH [PATH ...] [--json=findings.json]

Finds ``RegisterGradient``; ``gradient_override_map`` (of built-in op types such as
``{"Sign": "Identity"}``, or of the py_func idiom's ``"PyFunc"``); calls that pass
``grad=`` to ``py_func`` / ``numpy_function`` or to the project's own helper under any
name (a function in the scanned tree that makes a py_func under an override, or any
``*py_func*`` name); py_funcs inside an override block or a `tf.custom_gradient`
function; and ``Defun`` with ``python_grad_func``, with file:line and the crossgrad
entry point that replaces each. Calls into `crossgrad.tf1` are listed as migrated.
Files parse with `ast`; files that do not (e.g. Python 2) fall back to regular
expressions, marked ``(regex)``.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import sys
from typing import Iterable, Iterator

from absl import flags

from crossgrad.cli import usage
from crossgrad.tf1.op_types import OP_TYPES  # Imports no TensorFlow.

DROP_IN = "crossgrad.tf1.py_func(func, inp, Tout, grad=grad)"
REPLACEMENTS = {
    "RegisterGradient": f"{DROP_IN}, or crossgrad.tf1.override_map({{op_type: grad}}): no "
                        "registration, no random names",
    "gradient_override_map": f"{DROP_IN} for a \"PyFunc\" override (built in, no random "
                             "names); crossgrad.tf1.override_map for built-in op types",
    "op type override": "crossgrad.tf1.override_map({...}) (eager, tf.function, XLA); "
                        "crossgrad.tf1.port(name, op_type, grad) for a native JAX twin",
    "py_func with grad": "crossgrad.tf1.py_func (drop-in); crossgrad.tf1.port(name, func, "
                         "grad) for a JAX twin and the cross-check",
    "helper with grad": "crossgrad.tf1.py_func in place of the helper; crossgrad.tf1.port("
                        "name, func, grad) for a JAX twin and the cross-check",
    "py_func under override": f"{DROP_IN} in place of the override block",
    "numpy_function in custom_gradient": "crossgrad.tf1.port(name, func, grad) or a "
                                         "crossgrad OpDef (JAX twin, cross-check)",
    "Defun python_grad_func": "crossgrad.tf1.Defun (drop-in); crossgrad.tf1.port(name, "
                              "defun) for a native JAX twin",
    "migrated": "nothing to port",
}
_PY_FUNCS = ("py_func", "numpy_function", "py_function")
_HELPER_NAME = re.compile(r"py_?func", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Finding:
  path: str
  line: int
  kind: str
  code: str
  parsed: bool = True
  detail: str = ""

  @property
  def migrated(self) -> bool:
    return self.kind == "migrated"

  @property
  def replacement(self) -> str:
    return REPLACEMENTS[self.kind]

  def __str__(self) -> str:
    how = "" if self.parsed else " (regex)"
    detail = f" ({self.detail})" if self.detail else ""
    return (f"{self.path}:{self.line}: {self.kind}{detail}{how}: {self.code}\n"
            f"    -> {self.replacement}")


def _name(node: ast.AST) -> str:
  """The last component of a called name: ``tf.compat.v1.py_func`` -> ``py_func``."""
  if isinstance(node, ast.Call):
    node = node.func
  if isinstance(node, ast.Attribute):
    return node.attr
  return node.id if isinstance(node, ast.Name) else ""


def _dotted(node: ast.AST) -> str:
  """``a.b.c`` for a Name / Attribute chain, else ''."""
  if isinstance(node, ast.Attribute):
    base = _dotted(node.value)
    return f"{base}.{node.attr}" if base else ""
  return node.id if isinstance(node, ast.Name) else ""


def _override_keys(call: ast.Call) -> list[str] | None:
  """The op types of ``gradient_override_map({"Sign": ...})``; None if not a literal."""
  if call.args and isinstance(call.args[0], ast.Dict):
    keys = call.args[0].keys
    if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
      return [k.value for k in keys]
  return None


def helpers(tree: ast.AST) -> set[str]:
  """Names of functions that make a py_func under an override or next to RegisterGradient
  (the seeds' helper, whatever the project called it)."""
  found = set()
  for node in ast.walk(tree):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      calls = {_name(n) for n in ast.walk(node) if isinstance(n, ast.Call)}
      if calls & set(_PY_FUNCS) and calls & {"RegisterGradient", "gradient_override_map"}:
        found.add(node.name)
  return found


class _Visitor(ast.NodeVisitor):
  """Walks one module, tracking override blocks, custom_gradient functions and the names
  bound to crossgrad.tf1."""

  def __init__(self, path: str, lines: list[str], helper_names: Iterable[str]):
    self.path, self.lines = path, lines
    self.helper_names = set(helper_names)
    self.findings: list[Finding] = []
    self._in_override = 0
    self._in_custom_gradient = 0
    self._listed: set[int] = set()  # ids of override calls listed with their with-block.
    self._tf1 = set()  # Dotted names of the crossgrad.tf1 module ("tf1", "crossgrad.tf1").
    self._tf1_names = {}  # Names imported from crossgrad.tf1 -> their crossgrad name.

  def _add(self, node: ast.AST, kind: str, detail: str = ""):
    self.findings.append(Finding(self.path, node.lineno, kind,
                                 self.lines[node.lineno - 1].strip(), detail=detail))

  def visit_Import(self, node: ast.Import):
    for alias in node.names:
      if alias.name == "crossgrad.tf1":
        self._tf1.add(alias.asname or "crossgrad.tf1")
      elif alias.name == "crossgrad":
        self._tf1.add(f"{alias.asname or 'crossgrad'}.tf1")

  def visit_ImportFrom(self, node: ast.ImportFrom):
    for alias in node.names:
      if node.module == "crossgrad" and alias.name == "tf1":
        self._tf1.add(alias.asname or "tf1")
      elif (node.module or "").startswith("crossgrad.tf1"):
        self._tf1_names[alias.asname or alias.name] = alias.name

  def _migrated(self, call: ast.Call) -> str | None:
    """The crossgrad.tf1 entry point ``call`` calls, or None."""
    if isinstance(call.func, ast.Name) and call.func.id in self._tf1_names:
      return self._tf1_names[call.func.id]
    if isinstance(call.func, ast.Attribute) and _dotted(call.func.value) in self._tf1:
      return call.func.attr
    return None

  def visit_With(self, node: ast.With):
    overrides = [i.context_expr for i in node.items
                 if _name(i.context_expr) == "gradient_override_map"]
    for call in overrides:
      self._listed.add(id(call))
      keys = _override_keys(call) if isinstance(call, ast.Call) else None
      if keys and set(keys) <= set(OP_TYPES):
        self._add(call, "op type override", ", ".join(keys))
      else:
        self._add(call, "gradient_override_map")
    self._in_override += bool(overrides)
    self.generic_visit(node)
    self._in_override -= bool(overrides)

  def visit_FunctionDef(self, node):
    custom = any(_name(d) == "custom_gradient" for d in node.decorator_list)
    self._in_custom_gradient += custom
    self.generic_visit(node)
    self._in_custom_gradient -= custom

  visit_AsyncFunctionDef = visit_FunctionDef

  def visit_Call(self, node: ast.Call):
    name = _name(node)
    keywords = {k.arg for k in node.keywords}
    migrated = self._migrated(node)
    if migrated is not None:
      self._add(node, "migrated", f"crossgrad.tf1.{migrated}")
    elif name == "RegisterGradient":
      self._add(node, "RegisterGradient")
    elif name == "gradient_override_map" and id(node) not in self._listed:
      self._add(node, "gradient_override_map")  # Made outside a with (a helper returns it).
    elif name in _PY_FUNCS and "grad" in keywords:
      self._add(node, "py_func with grad")
    elif "grad" in keywords and (name in self.helper_names or _HELPER_NAME.search(name)):
      self._add(node, "helper with grad", name)
    elif name in _PY_FUNCS and self._in_override:
      self._add(node, "py_func under override")
    elif name in _PY_FUNCS and self._in_custom_gradient:
      self._add(node, "numpy_function in custom_gradient")
    elif name == "Defun" and "python_grad_func" in keywords:
      self._add(node, "Defun python_grad_func")
    self.generic_visit(node)


_REGEX = {
    "RegisterGradient": re.compile(r"\bRegisterGradient\s*\("),
    "gradient_override_map": re.compile(r"\bgradient_override_map\s*\("),
    "py_func with grad": re.compile(r"^(?!\s*def\b).*\b\w*(?:py_?func|numpy_function|"
                                    r"py_function)\w*\s*\(.*\bgrad\s*=", re.IGNORECASE),
    "Defun python_grad_func": re.compile(r"\bDefun\s*\(.*\bpython_grad_func\s*="),
}
_PY_FUNC_CALL = re.compile(r"\b(?:py_func|numpy_function|py_function)\s*\(")


def _scan_regex(path: str, lines: list[str]) -> list[Finding]:
  """Line-based fallback; a py_func call indented under an override line counts too."""
  findings, override_indent = [], None
  for number, line in enumerate(lines, 1):
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
      continue
    indent = len(line) - len(line.lstrip())
    if override_indent is not None and indent <= override_indent:
      override_indent = None
    kind = next((k for k, pattern in _REGEX.items() if pattern.search(line)), None)
    if kind is None and override_indent is not None and _PY_FUNC_CALL.search(line):
      kind = "py_func under override"
    if kind == "gradient_override_map":
      override_indent = indent
    if kind is not None:
      findings.append(Finding(path, number, kind, stripped, parsed=False))
  return findings


def _read(path: str) -> tuple[str, ast.AST | None]:
  with open(path, encoding="utf-8", errors="replace") as f:
    source = f.read()
  try:
    return source, ast.parse(source, filename=path)
  except (SyntaxError, ValueError):
    return source, None


def scan_file(path: str, helper_names: Iterable[str] = ()) -> list[Finding]:
  """Findings in one Python file, in line order; ``helper_names`` are py_func helpers
  defined elsewhere in the tree (the file's own are found here)."""
  source, tree = _read(path)
  lines = source.splitlines()
  if tree is None:
    return _scan_regex(path, lines)
  visitor = _Visitor(path, lines, set(helper_names) | helpers(tree))
  visitor.visit(tree)
  return sorted(visitor.findings, key=lambda f: f.line)


def _python_files(root: str) -> Iterator[str]:
  if os.path.isfile(root):
    yield root
    return
  for folder, dirs, files in os.walk(root):
    dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
    for name in sorted(files):
      if name.endswith(".py"):
        yield os.path.join(folder, name)


def scan(*paths: str) -> list[Finding]:
  """Findings in every ``.py`` file under ``paths`` (files or folders); a helper defined
  in one file is recognized where another file calls it."""
  files = [path for root in paths for path in _python_files(root)]
  names = set()
  for path in files:
    tree = _read(path)[1]
    names |= helpers(tree) if tree is not None else set()
  return [f for path in files for f in scan_file(path, names)]


def summary(findings: list[Finding]) -> str:
  to_port = [f for f in findings if not f.migrated]
  fallback = len({f.path for f in findings if not f.parsed})
  return (f"{len(to_port)} to port in {len({f.path for f in to_port})} files, "
          f"{len(findings) - len(to_port)} calls already migrated to crossgrad.tf1 "
          f"({fallback} files read with the regex fallback)")


FLAGS = flags.FLAGS


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_string("json", None, "Also write the findings as JSON to this path.")


def main(argv):
  paths = argv[1:]
  if not paths:
    print("usage: python -m crossgrad.tf1.scan PATH [PATH ...]", file=sys.stderr)
    return 2
  missing = [p for p in paths if not os.path.exists(p)]
  if missing:
    print(f"[crossgrad] no such file or folder: {', '.join(missing)}", file=sys.stderr)
    return 2
  findings = scan(*paths)
  for finding in findings:
    print(finding)
  print(summary(findings))
  if FLAGS.json:
    with open(FLAGS.json, "w") as f:
      json.dump([{**dataclasses.asdict(x), "replacement": x.replacement,
                  "status": "migrated" if x.migrated else "to port"} for x in findings],
                f, indent=2)
  return 0


def run():
  """Console-script entry point (``crossgrad-scan``)."""
  usage.console(main, __name__, define_flags)


if __name__ == "__main__":
  run()
