r"""Cross-checks crossgrad ops between NumPy, TensorFlow, JAX and PyTorch (where installed);
exits non-zero on a mismatch.

  python -m crossgrad.check                        # every built-in op
  python -m crossgrad.check --module=my_ops --ops=clipped_ste --json=report.json
  crossgrad-check --backends=jax --dtypes=float64 --devices=gpu
  python -m crossgrad.check --backends=torch --modes=eager,compile
  python -m crossgrad.check --cpu_devices=4 --devices=all   # cross-device rows on a CPU
  python -m crossgrad.check --html=report.html --all_rows   # a page for a CI artifact
  python -m crossgrad.check --module=path/to/my_ops.py --tolerance=bitwise
  python -m crossgrad.check --modes=saved_model,jax2tf,export  # export round trips only

The report: a summary grid (op and parameter set x backend and mode, worst error per
cell), the failing rows, then with --all_rows every row.

Exit status: 0 if every check passed (advisory rows, divergences at special values, pass),
1 if one failed, 2 for a bad flag value or a
selection that checks nothing (a one-line message on stderr).
"""

import sys

from absl import app
from absl import flags

from crossgrad.backends import base
from crossgrad.backends import compile_cache
from crossgrad.backends import cpu_devices
from crossgrad.checker import compare
from crossgrad.checker import engine
from crossgrad.checker import flag_help
from crossgrad.checker import grid
from crossgrad.checker import html_report
from crossgrad.checker import keras_rows
from crossgrad.checker import quiet
from crossgrad.checker import selection
from crossgrad.checker import special_values
from crossgrad.registry import op_registry
from crossgrad.registry import ops  # pylint: disable=unused-import  # The built-in ops.
from crossgrad.registry.errors import CrossgradError

_OPS = flags.DEFINE_list("ops", None, "Ops to check (default: every registered op).")
_BACKENDS = flags.DEFINE_list("backends", base.default_backends(),
                              "Backends compared with the NumPy reference (default: "
                              "tensorflow, jax, and torch where installed).")
_DTYPES = flags.DEFINE_list(
    "dtypes", ["float32", "float64"], "Floating dtypes to check: float16, bfloat16, float32, "
    "float64 (complex inputs take complex64 with float32, complex128 with float64; "
    "docs/dtypes.md).")
_DEVICES = flags.DEFINE_list("devices", ["all"],
                             "'all', platforms (cpu, gpu, tpu, cuda) or device names (gpu:0, "
                             "cuda:0).")
_MODES = flags.DEFINE_list(
    "modes", None, "Execution and transformation modes (eager, graph, jit, compile, vmap, "
    "scan, checkpoint, vectorized_map), and export round trips, which run only when named "
    "here (saved_model, jax2tf, export); default: every execution and transformation mode "
    "of each backend.")
_CPU_DEVICES = flags.DEFINE_integer(
    "cpu_devices", None, "Split the host CPU into this many logical devices (cpu:0 ...) "
    "in every backend before checking, to cover multi-device runs without accelerators.")
_MODULE = flags.DEFINE_multi_string(
    "module", [], "Module to import first, to register ops: a dotted name or a .py path "
    "(repeatable).")
_TOLERANCE = flags.DEFINE_string(
    "tolerance", "default", "'default' (relative, per dtype), a number (relative), or "
    "'bitwise': identical bits across backends, modes and devices.")
_SPECIAL = flags.DEFINE_string(
    "special", "advisory", "Special-value rows (0, -0.0, +-inf, NaN, the dtype's extremes, "
    "the ops' own edges): 'advisory' (differences only where the reference is not finite "
    "or an input is not finite or extreme, or a framework raising there, are reported "
    "but do not fail), 'strict' (they fail) or 'off' ('true'/'false' also work).")
_PRECISION = flags.DEFINE_string(
    "precision", "highest", "'highest': every backend computes float32 matmuls and "
    "convolutions in full float32 precision during the check (no TF32 or bfloat16 passes on "
    "GPUs), restored afterwards; 'framework': the frameworks' own defaults, to measure them.")
_DETERMINISM = flags.DEFINE_bool(
    "determinism", False, "Run every backend, device and mode twice and compare the runs "
    "bit for bit (determinism rows: nondeterministic gradients, e.g. GPU scatter-adds); "
    "doubles the time of the forward and vjp rows.")
_JSON = flags.DEFINE_string("json", None, "Write the report as JSON to this path.")
_HTML = flags.DEFINE_string("html", None, "Write the report as one self-contained HTML page.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed for inputs, cotangents and directions.")
_ALL_ROWS = flags.DEFINE_bool("all_rows", False,
                              "After the grid and the failing rows, print every row.")
_LIST = flags.DEFINE_bool("list", False, "List the registered ops and exit.")
_COMPILE_CACHE = flags.DEFINE_bool(
    "compile_cache", True, "Keep compiled programs (JAX executables, torch.compile graphs) "
    "in --cache_dir, so the next run compiles only what changed; --nocompile_cache compiles "
    "everything afresh and writes nothing (docs/cross-check.md).")
_CACHE_DIR = flags.DEFINE_string(
    "cache_dir", None, f"The compile caches' directory (default: ${compile_cache.ENV}, "
    "else $XDG_CACHE_HOME/crossgrad, else ~/.cache/crossgrad).")


def _fail(message: str) -> int:
  print(" ".join(message.split()), file=sys.stderr)  # One line.
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
      try:
        selection.load_module(module)
      except ImportError as e:
        raise CrossgradError("cannot import the module", argument="--module",
                             actual=f"{module!r} ({type(e).__name__}: {e})") from None
    if _LIST.value:
      for name in op_registry.names():
        print(f"{name:24s} {op_registry.get(name).doc}")
      return 0
    ops = selection.ops(_OPS.value, flags=True)
    if keras_rows.NAME in _BACKENDS.value:
      keras_rows.register(_MODULE.value)
    for name in _BACKENDS.value:
      if name not in base.names():
        raise selection.unknown("--backends", name, base.names())
    if _CPU_DEVICES.value is not None:
      cpu_devices.configure(_CPU_DEVICES.value,
                            [b for b in _BACKENDS.value if b != "numpy"])
    cache = (_CACHE_DIR.value or compile_cache.directory()) if _COMPILE_CACHE.value else None
    if cache:
      compile_cache.configure(cache, _BACKENDS.value)
    modules = selection.backends(_BACKENDS.value, flags=True)
    selection.check(ops, modules, _DTYPES.value, _DEVICES.value, _MODES.value, flags=True)
    tolerance = compare.check_tolerance(_TOLERANCE.value, "--tolerance")
    special = special_values.policy(_SPECIAL.value, "--special")
    if _PRECISION.value not in engine.PRECISIONS:
      raise selection.unknown("--precision", _PRECISION.value, engine.PRECISIONS)
    report = engine.cross_check(
        ops, backends=_BACKENDS.value, dtypes=_DTYPES.value, devices=_DEVICES.value,
        modes=_MODES.value, seed=_SEED.value, tolerance=tolerance, special=special or False,
        precision=_PRECISION.value, determinism=_DETERMINISM.value,
        progress=lambda line: print(line, file=sys.stderr, flush=True))
  except CrossgradError as e:
    return _fail(str(e))
  print(grid.text_report(report, all_rows=_ALL_ROWS.value))
  if cache:
    print(compile_cache.summary(cache, compile_cache.stats(_BACKENDS.value)), file=sys.stderr)
  if _JSON.value:
    with open(_JSON.value, "w") as f:
      f.write(report.to_json())
  if _HTML.value:
    html_report.write(_HTML.value, report, all_rows=_ALL_ROWS.value)
  if not report.checked:
    return _fail(str(selection.nothing_to_check(
        "--ops", "every row is skipped or informational (e.g. a declared gradient with "
        "--backends= empty)")))
  return 0 if report.ok else 1


def run():
  """Console-script entry point (``crossgrad-check``)."""
  flag_help.list_in_help(__name__)
  app.run(main)


if __name__ == "__main__":
  run()
