"""Upgrading files and trees: each ``.py`` file with a TF1 idiom (`crossgrad.tf1.scan`) is
rewritten; every `scan` finding is in the report, as changed, kept (it runs in TF2 as it
is) or left with the reason; a result that does not parse is never written."""

from __future__ import annotations

import ast
import difflib
import os
import re
import shutil
from typing import Iterable

import libcst as cst

from crossgrad.tf1 import scan
from crossgrad.tf1.upgrade import transformer
from crossgrad.tf1.upgrade.report import CHANGED, Entry, FileResult, KEPT, LEFT

_KEPT = {
    "RegisterGradient": "tf.RegisterGradient works in TF2; crossgrad.tf1.override_map reads "
                        "the names it registers",
    "numpy_function in custom_gradient": "already TF2 (tf.custom_gradient); crossgrad.tf1.port "
                                         "gives it a JAX twin",
}


def _default(finding: scan.Finding, helpers: set[str]) -> Entry:
  """The entry for a finding no rewrite reported on."""
  def entry(status, what):
    return Entry(finding.path, finding.line, status, what)

  if finding.kind in _KEPT:
    return entry(KEPT, _KEPT[finding.kind])
  if finding.kind in ("helper with grad", "py_func with grad"):
    called = [h for h in helpers if re.search(rf"\b{re.escape(h)}\s*\(", finding.code)]
    if called:
      return entry(KEPT, f"calls {called[0]}, which now runs crossgrad.tf1.py_func")
    return entry(LEFT, "the helper it calls was not rewritten (defined outside the upgraded "
                 "files, or its py_func is not under a {\"PyFunc\": name} override): call "
                 "crossgrad.tf1.py_func(func, inp, Tout, grad=grad) in its place")
  if finding.kind == "py_func under override":
    return entry(LEFT, "the override block around it was left (see its line)")
  return entry(LEFT, f"{finding.kind}: not in a form the upgrade rewrites "
               "(docs/tf1.md, 'Upgrading a project')")


def upgrade_file(path: str, tree_helpers: Iterable[str] = ()) -> FileResult:
  """The upgrade of one file; ``source`` is None when nothing changed (or it cannot parse)."""
  findings = [f for f in scan.scan_file(path, tree_helpers) if not f.migrated]
  result = FileResult(path, findings=findings)
  if not findings:
    return result
  if not findings[0].parsed:
    result.unreadable = True
    result.entries = [Entry(path, f.line, LEFT, "the file does not parse as Python 3: convert "
                            "it first (2to3), then upgrade it") for f in findings]
    return result
  with open(path, encoding="utf-8") as f:
    source = f.read()
  module, entries, helpers, used = transformer.upgrade_module(path, cst.parse_module(source))
  result.entries, result.helpers = entries, helpers
  if used or any(e.status == CHANGED for e in entries):
    new = module.code
    try:
      compile(new, path, "exec", flags=ast.PyCF_ONLY_AST)
    except SyntaxError as e:  # A rewrite bug: keep the file as it was, say so.
      result.unreadable = True
      result.entries = [Entry(path, e.lineno or 0, LEFT, f"the rewrite did not parse ({e.msg}): "
                              "the file is left as it was; please report it")]
      return result
    result.source = new if new != source else None
  return result


def add_defaults(results: list[FileResult]) -> None:
  """Adds an entry for each scan finding no rewrite reported on, once every file is done
  (a call site is kept when the tree's helper it calls was rewritten)."""
  rewritten = {h for r in results for h in r.helpers}
  for result in results:
    lines = {e.line for e in result.entries}
    if not result.unreadable:
      result.entries += [_default(f, rewritten) for f in result.findings if f.line not in lines]


def python_files(root: str) -> list[str]:
  return list(scan._python_files(root))  # pylint: disable=protected-access


def upgrade_paths(paths: list[str]) -> list[FileResult]:
  """Every file's result; helpers defined in one file count where another calls them."""
  names = set()
  for path in paths:
    try:
      names |= scan.helpers(ast.parse(open(path, encoding="utf-8").read()))
    except (SyntaxError, ValueError, UnicodeDecodeError):
      pass
  results = [upgrade_file(path, names) for path in paths]
  add_defaults(results)
  return results


def diff(result: FileResult) -> str:
  with open(result.path, encoding="utf-8") as f:
    old = f.read()
  return "".join(difflib.unified_diff(old.splitlines(True), result.source.splitlines(True),
                                      result.path, f"{result.path} (upgraded)"))


def copy_tree(src: str, dst: str) -> None:
  """``src``'s files into ``dst`` (what the upgrade then overwrites), like tf_upgrade_v2."""
  shutil.copytree(src, dst, dirs_exist_ok=True,
                  ignore=shutil.ignore_patterns(".git", "__pycache__"))


def destination(path: str, src: str, dst: str) -> str:
  return dst if os.path.isfile(src) else os.path.join(dst, os.path.relpath(path, src))
