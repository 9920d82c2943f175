"""The ``crossgrad-upgrade`` command (see the package's docstring)."""

from __future__ import annotations

import os
import sys

from absl import flags

from crossgrad.cli import usage  # A bad flag exits with 2, not 1.

FLAGS = flags.FLAGS
USAGE = ("usage: python -m crossgrad.tf1.upgrade SRC DST [--report=FILE] [--diff] [--port]\n"
         "       python -m crossgrad.tf1.upgrade SRC --in_place   (SRC, DST: files or folders)")


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_bool("in_place", False, "Rewrite SRC itself (no DST).")
  flags.DEFINE_bool("diff", False, "Print a unified diff of each rewritten file; without DST "
                    "or --in_place, only that (nothing is written).")
  flags.DEFINE_string("report", None, "Write the report to this file (default: print it).")
  flags.DEFINE_bool("port", False, "Also write <file>_ports.py next to each rewritten file: "
                    "its overrides as crossgrad.tf1.port ops, with a check command per op "
                    "in the report.")


def _usage_error(argv) -> str | None:
  """Why the paths do not make a run, or None."""
  paths = argv[1:]
  if not paths or len(paths) > 2:
    return "pass SRC and DST, or SRC with --in_place or --diff"
  src = paths[0]
  if not os.path.exists(src):
    return f"no such file or folder: {src}"
  if FLAGS.in_place and len(paths) == 2:
    return "--in_place rewrites SRC: pass no DST"
  if len(paths) == 1 and not (FLAGS.in_place or FLAGS.diff):
    return "pass DST (or --in_place, or --diff for a dry run)"
  if len(paths) == 2:
    dst = paths[1]
    if os.path.abspath(dst) == os.path.abspath(src):
      return "DST is SRC: pass --in_place instead"
    if os.path.exists(dst) and os.path.isdir(dst) != os.path.isdir(src):
      return "SRC and DST must both be files or both be folders"
  return None


def main(argv):
  problem = _usage_error(argv)
  if problem:
    print(f"[crossgrad] {problem}\n{USAGE}", file=sys.stderr)
    return 2
  from crossgrad.tf1.upgrade import command  # pylint: disable=g-import-not-at-top
  src = argv[1]
  dst = src if FLAGS.in_place else (argv[2] if len(argv) > 2 else None)
  text = command.run(src, dst, diff=FLAGS.diff, port=FLAGS.port)
  if FLAGS.report:
    with open(FLAGS.report, "w", encoding="utf-8") as f:
      f.write(text)
    print(text.splitlines()[-1] + f" (report: {FLAGS.report})")
  else:
    print(text, end="")
  return 0


def run():
  """Console-script entry point (``crossgrad-upgrade``)."""
  usage.console(main, __name__, define_flags)


if __name__ == "__main__":
  run()
