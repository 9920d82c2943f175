"""``--help`` of every crossgrad binary lists its own flags.

absl's ``--help`` shows the key flags of the main module only (``sys.argv[0]``: the file
run with ``python -m``, or a console script), and flags are key flags of the module that
defines them. crossgrad's binaries define theirs in library modules (`checker.main`,
`benchmarks.timing`), so without this ``--help`` would list none of them.
"""

from __future__ import annotations

import sys

from absl import flags


def list_in_help(*modules: str, flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Makes every flag defined by ``modules`` (module names) a key flag of the main module,
  so that ``--help`` lists it. Call it once the flags are defined, before `app.run`."""
  for module in modules:
    for flag in flag_values.get_flags_for_module(module):
      flag_values.register_key_flag_for_module(sys.argv[0], flag)
