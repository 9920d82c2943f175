"""The ``crossgrad-port`` command: ``crossgrad-port SRC.py ... --out_dir=DIR
[--report=R.json] [--samples=FILE.py]``.

Imports each source file (porting runs the user's code), finds its custom-gradient
definitions, writes ``DIR/<stem>_xp.py`` and proves each op in it against its original
(`crossgrad.port.prove`). Exit status: 0 when every definition was ported or refused, 1
when an original's backward is wrong (``original_wrong``), 2 for bad usage.
"""

from __future__ import annotations

import os
import sys

from absl import flags

from crossgrad.checker import usage

FLAGS = flags.FLAGS
USAGE = "usage: crossgrad-port SRC.py [SRC.py ...] --out_dir=DIR [--report=R.json]"


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_string("out_dir", None, "Write DIR/<stem>_xp.py here for each source file.")
  flags.DEFINE_string("report", None, "Write the JSON report (R.json) to this file.")
  flags.DEFINE_string("samples", None, "A .py file with SAMPLES (and GRADIENTS) dicts, "
                      "used over the source modules' own.")
  flags.DEFINE_list("backends", None, "Backends each port is checked in (default: the "
                    "original's framework; numpy, the reference, always runs).")
  flags.DEFINE_list("modes", None, "Modes of the check (default: eager and the "
                    "framework's compiled mode).")
  flags.DEFINE_list("dtypes", ["float32", "float64"], "Dtypes of the check.")


def _usage_error(argv) -> str | None:
  paths = argv[1:]
  if not paths:
    return "pass at least one source file"
  missing = [p for p in paths if not os.path.isfile(p) or not p.endswith(".py")]
  if missing:
    return f"no such .py file: {missing[0]}"
  if not FLAGS.out_dir:
    return "pass --out_dir=DIR (where the _xp.py files go)"
  if FLAGS.samples and not os.path.isfile(FLAGS.samples):
    return f"no such --samples file: {FLAGS.samples}"
  return None


def main(argv) -> int:
  problem = _usage_error(argv)
  if problem:
    return usage.fail(f"[crossgrad] {problem}\n{USAGE}")
  from crossgrad.port import run  # pylint: disable=g-import-not-at-top
  from crossgrad.port import report  # pylint: disable=g-import-not-at-top
  from crossgrad.port.prove import CheckSettings  # pylint: disable=g-import-not-at-top
  from crossgrad.registry.errors import CrossgradError  # pylint: disable=g-import-not-at-top
  settings = CheckSettings(backends=FLAGS.backends, modes=FLAGS.modes,
                           dtypes=tuple(FLAGS.dtypes))
  try:
    results = run.files(argv[1:], out_dir=FLAGS.out_dir, samples_path=FLAGS.samples,
                        settings=settings)
  except CrossgradError as e:
    return usage.fail(e)
  print(report.text(results), end="")
  if FLAGS.report:
    report.write(results, FLAGS.report)
    print(f"(report: {FLAGS.report})")
  return 1 if any(r.status == "original_wrong" for r in results) else 0


def run():
  """Console-script entry point (``crossgrad-port``)."""
  usage.console(main, __name__, define_flags)


if __name__ == "__main__":
  run()
