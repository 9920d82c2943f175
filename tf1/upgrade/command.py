"""What ``crossgrad-upgrade`` does once its arguments are checked: upgrade, write, report."""

from __future__ import annotations

import os
import shutil

from crossgrad.tf1.upgrade import files
from crossgrad.tf1.upgrade import ports
from crossgrad.tf1.upgrade import report


def run(src: str, dst: str | None, *, diff: bool = False, port: bool = False) -> str:
  """Upgrades ``src`` into ``dst`` (None: a dry run; ``src``: in place); returns the report.
  Paths in the report are the destination's (the source's on a dry run)."""
  if dst is not None and os.path.isdir(src) and dst != src:
    files.copy_tree(src, dst)
  results = files.upgrade_paths(files.python_files(src))
  diffs = []
  for result in results:
    if result.source is None:
      continue
    if diff:
      diffs.append(files.diff(result))
    if dst is None:
      continue
    target = files.destination(result.path, src, dst)
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    with open(target, "w", encoding="utf-8") as f:
      f.write(result.source)
    if port:
      ports.write(result, target)
  if dst is not None and os.path.isfile(src) and dst != src and results[0].source is None:
    shutil.copyfile(src, dst)
  if dst is not None:
    for result in results:
      target = files.destination(result.path, src, dst)
      result.entries = [e.__class__(target, e.line, e.status, e.what) for e in result.entries]
      result.path = target
  return "".join(diffs) + report.text(results)
