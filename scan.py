r"""Lists the TF1 gradient overrides in a source tree and what replaces each.

  python -m crossgrad.scan PATH [PATH ...] [--json=findings.json]

Finds ``RegisterGradient``, ``gradient_override_map``, ``py_func`` /
``numpy_function`` calls that carry a custom gradient (a ``grad=`` argument, inside an
override block, or inside a `tf.custom_gradient` function) and ``Defun`` with
``python_grad_func``, with file:line and the crossgrad entry point that replaces
each. Files parse with `ast`; files that do not (e.g. Python 2) fall back to regular
expressions, marked ``(regex)``.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import sys
from typing import Iterator

from absl import app
from absl import flags

DROP_IN = "crossgrad.tf1.py_func(func, inp, Tout, grad=grad)"
REPLACEMENTS = {
    "RegisterGradient": f"{DROP_IN}: no registration, no random names",
    "gradient_override_map": f"{DROP_IN}: the scoped override is built in",
    "py_func with grad": "crossgrad.tf1.py_func (drop-in); crossgrad.tf1.port(name, func, "
                         "grad) for a JAX twin and the cross-check",
    "py_func under override": f"{DROP_IN} in place of the override block",
    "numpy_function in custom_gradient": "crossgrad.tf1.port(name, func, grad) or a "
                                         "crossgrad OpDef (JAX twin, cross-check)",
    "Defun python_grad_func": f"{DROP_IN} with the python_grad_func as grad",
}
_PY_FUNCS = ("py_func", "numpy_function", "py_function")


@dataclasses.dataclass(frozen=True)
class Finding:
  path: str
  line: int
  kind: str
  code: str
  parsed: bool = True

  @property
  def replacement(self) -> str:
    return REPLACEMENTS[self.kind]

  def __str__(self) -> str:
    how = "" if self.parsed else " (regex)"
    return f"{self.path}:{self.line}: {self.kind}{how}: {self.code}\n    -> {self.replacement}"


def _name(node: ast.AST) -> str:
  """The last component of a called name: ``tf.compat.v1.py_func`` -> ``py_func``."""
  if isinstance(node, ast.Call):
    node = node.func
  if isinstance(node, ast.Attribute):
    return node.attr
  return node.id if isinstance(node, ast.Name) else ""


class _Visitor(ast.NodeVisitor):
  """Walks one module, tracking override blocks and custom_gradient functions."""

  def __init__(self, path: str, lines: list[str]):
    self.path, self.lines = path, lines
    self.findings: list[Finding] = []
    self._in_override = 0
    self._in_custom_gradient = 0

  def _add(self, node: ast.AST, kind: str):
    self.findings.append(Finding(self.path, node.lineno, kind,
                                 self.lines[node.lineno - 1].strip()))

  def visit_With(self, node: ast.With):
    overrides = [i for i in node.items if _name(i.context_expr) == "gradient_override_map"]
    for item in overrides:
      self._add(item.context_expr, "gradient_override_map")
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
    if name == "RegisterGradient":
      self._add(node, "RegisterGradient")
    elif name in _PY_FUNCS and "grad" in keywords:
      self._add(node, "py_func with grad")
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
    "py_func with grad": re.compile(r"^(?!\s*def\b).*\b(?:py_func|numpy_function|"
                                    r"py_function)\s*\(.*\bgrad\s*="),
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


def scan_file(path: str) -> list[Finding]:
  """Findings in one Python file, in line order."""
  with open(path, encoding="utf-8", errors="replace") as f:
    source = f.read()
  lines = source.splitlines()
  try:
    tree = ast.parse(source, filename=path)
  except (SyntaxError, ValueError):
    return _scan_regex(path, lines)
  visitor = _Visitor(path, lines)
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
  """Findings in every ``.py`` file under ``paths`` (files or folders)."""
  return [f for root in paths for path in _python_files(root) for f in scan_file(path)]


FLAGS = flags.FLAGS


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_string("json", None, "Also write the findings as JSON to this path.")


def main(argv):
  paths = argv[1:]
  if not paths:
    print("usage: python -m crossgrad.scan PATH [PATH ...]", file=sys.stderr)
    return 2
  missing = [p for p in paths if not os.path.exists(p)]
  if missing:
    print(f"[crossgrad] no such file or folder: {', '.join(missing)}", file=sys.stderr)
    return 2
  findings = scan(*paths)
  for finding in findings:
    print(finding)
  files = len({f.path for f in findings})
  fallback = len({f.path for f in findings if not f.parsed})
  print(f"{len(findings)} findings in {files} files ({fallback} read with the regex "
        "fallback)")
  if FLAGS.json:
    with open(FLAGS.json, "w") as f:
      json.dump([{**dataclasses.asdict(x), "replacement": x.replacement} for x in findings],
                f, indent=2)
  return 0


def run():
  """Console-script entry point (``crossgrad-scan``)."""
  define_flags()
  app.run(main)


if __name__ == "__main__":
  run()
