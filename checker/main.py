r"""Cross-checks crossgrad ops between NumPy, TensorFlow and JAX; exits non-zero on a mismatch.

  python -m crossgrad.check                        # every built-in op
  python -m crossgrad.check --module=my_ops --ops=clipped_ste --json=report.json
  crossgrad-check --backends=jax --dtypes=float64 --devices=gpu
  python -m crossgrad.check --cpu_devices=4 --devices=all   # cross-device rows on a CPU
  python -m crossgrad.check --html=report.html --all_rows   # a page for a CI artifact

The report: a summary grid (op and parameter set x backend and mode, worst error per
cell), the failing rows, then with --all_rows every row.
"""

import importlib
import sys

from absl import app
from absl import flags

from crossgrad.backends import base
from crossgrad.backends import cpu_devices
from crossgrad.checker import engine
from crossgrad.checker import grid
from crossgrad.checker import html_report
from crossgrad.checker import quiet
from crossgrad.registry import op_registry
from crossgrad.registry import ops  # pylint: disable=unused-import  # The built-in ops.
from crossgrad.registry.errors import CrossgradError

_OPS = flags.DEFINE_list("ops", None, "Ops to check (default: every registered op).")
_BACKENDS = flags.DEFINE_list("backends", ["tensorflow", "jax"],
                              "Backends compared with the NumPy reference.")
_DTYPES = flags.DEFINE_list("dtypes", ["float32", "float64"], "Floating dtypes to check.")
_DEVICES = flags.DEFINE_list("devices", ["all"],
                             "'all', platforms (cpu, gpu, tpu) or device names (gpu:0).")
_MODES = flags.DEFINE_list("modes", None,
                           "Execution modes (eager, graph, jit); default: all of each backend.")
_CPU_DEVICES = flags.DEFINE_integer(
    "cpu_devices", None, "Split the host CPU into this many logical devices (cpu:0 ...) "
    "in every backend before checking, to cover multi-device runs without accelerators.")
_MODULE = flags.DEFINE_multi_string("module", [],
                                    "Module to import first, to register ops (repeatable).")
_JSON = flags.DEFINE_string("json", None, "Write the report as JSON to this path.")
_HTML = flags.DEFINE_string("html", None, "Write the report as one self-contained HTML page.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed for inputs, cotangents and directions.")
_ALL_ROWS = flags.DEFINE_bool("all_rows", False,
                              "After the grid and the failing rows, print every row.")
_LIST = flags.DEFINE_bool("list", False, "List the registered ops and exit.")


def _fail(message: str) -> int:
  print(message, file=sys.stderr)
  return 2


def main(argv):
  with quiet.captured(enabled=not flags.FLAGS["verbosity"].present) as capture:
    status = _check(argv)
    if status == 1 and capture.path:
      print(f"[crossgrad] framework messages: {capture.keep()} (--verbosity=0 shows them "
            "as they come)", file=sys.stderr)
  return status


def _check(argv) -> int:
  if len(argv) > 1:
    return _fail(f"[crossgrad] unexpected arguments: {argv[1:]}")
  try:
    for module in _MODULE.value:
      importlib.import_module(module)
    if _LIST.value:
      for name in op_registry.names():
        print(f"{name:24s} {op_registry.get(name).doc}")
      return 0
    ops = op_registry.resolve(_OPS.value)
    if _CPU_DEVICES.value is not None:
      cpu_devices.configure(_CPU_DEVICES.value,
                            [b for b in _BACKENDS.value if b != "numpy"])
    for name in _BACKENDS.value:
      base.load(name)
    report = engine.cross_check(
        ops, backends=_BACKENDS.value, dtypes=_DTYPES.value, devices=_DEVICES.value,
        modes=_MODES.value, seed=_SEED.value,
        progress=lambda line: print(line, file=sys.stderr, flush=True))
  except (CrossgradError, ImportError) as e:
    return _fail(str(e))
  print(grid.text_report(report, all_rows=_ALL_ROWS.value))
  if _JSON.value:
    with open(_JSON.value, "w") as f:
      f.write(report.to_json())
  if _HTML.value:
    html_report.write(_HTML.value, report, all_rows=_ALL_ROWS.value)
  return 0 if report.ok and report.rows else 1


def run():
  """Console-script entry point (``crossgrad-check``)."""
  app.run(main)


if __name__ == "__main__":
  run()
