"""Every crossgrad binary's exit status for bad usage: 2, with one line on stderr.

The binaries promise 0 (all agree, or done), 1 (a mismatch) and 2 (bad usage). absl's own
flag parsing exits 1 on an unknown flag or a malformed value, and an `absl.app.UsageError`
prints the whole usage and exits 1 too, which a CI script reads as a gradient mismatch;
absl's ``--help`` exits 1 as well. `run` is `absl.app.run` with usage errors made one line
on stderr and exit status 2, ``--help`` exiting 0, and ``--version``; every binary starts
through it (tests/test_usage_errors.py).
"""

from __future__ import annotations

import itertools
import sys
from typing import Callable, Sequence

from absl import app
from absl import flags

from crossgrad.cli import flag_help
from crossgrad.registry.version import __version__

USAGE_ERROR = 2
# absl's help flags (`absl.app.define_help_flags`): each prints the usage and exits 1.
HELP_FLAGS = {"help", "helpshort", "helpfull", "helpxml", "?"}
VERSION = flags.DEFINE_bool("version", False, "Prints crossgrad's version and exits.")


def fail(message: object) -> int:
  """Prints ``message`` as one line on stderr; returns `USAGE_ERROR`, the exit status."""
  print(" ".join(str(message).split()), file=sys.stderr)
  return USAGE_ERROR


def _asks_for_help(argv: Sequence[str]) -> bool:
  options = itertools.takewhile(lambda arg: arg != "--", argv[1:])
  return any(arg.lstrip("-").split("=")[0] in HELP_FLAGS
             for arg in options if arg.startswith("-"))


def parse_flags(argv: Sequence[str]) -> list[str]:
  """absl's parser (flag validators included), exiting 2 with one line on a bad flag, 0
  after ``--help`` or ``--version``."""
  try:
    args = flags.FLAGS(argv)
  except flags.Error as e:
    sys.exit(fail(f"[crossgrad] {e} (--helpfull lists the flags)"))
  except SystemExit as e:
    # absl's help flags print the usage, then exit 1: asking for help is no failure.
    if e.code == 1 and _asks_for_help(argv):
      sys.exit(0)
    raise
  if VERSION.value:
    print(f"crossgrad {__version__}")
    sys.exit(0)
  return args


def run(main: Callable[[list[str]], int | None], argv: Sequence[str] | None = None) -> None:
  """`absl.app.run(main)`, with usage errors (bad flags, `app.UsageError`) exiting 2."""
  def main_reporting_usage_errors(args):
    try:
      return main(args)
    except app.UsageError as e:
      return fail(f"[crossgrad] {e}")

  flag_help.list_in_help(__name__)  # ``--help`` lists ``--version``.
  app.run(main_reporting_usage_errors, argv=argv, flags_parser=parse_flags)


def console(main: Callable[[list[str]], int | None], module: str,
            define_flags: Callable[[], None] = lambda: None) -> None:
  """A binary's entry point (console script or ``python -m``): ``define_flags()``, then
  ``module``'s flags listed in ``--help`` (`flag_help`), then `run(main)`."""
  define_flags()
  flag_help.list_in_help(module)
  run(main)
