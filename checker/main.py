r"""Cross-checks crossgrad ops between NumPy, TensorFlow, JAX and PyTorch (where installed);
exits non-zero on a mismatch.

  python -m crossgrad.check                        # every built-in op
  python -m crossgrad.check --module=my_ops.py     # the ops my_ops.py registers
  python -m crossgrad.check --module=my_ops.py --watch  # re-checked as you edit it
  python -m crossgrad.check --module=my_ops --ops=clipped_ste --json=report.json
  crossgrad-check --backends=jax --dtypes=float64 --devices=gpu
  python -m crossgrad.check --backends=torch --modes=eager,compile
  python -m crossgrad.check --cpu_devices=4 --devices=all   # cross-device rows on a CPU
  python -m crossgrad.check --html=report.html --all_rows   # a page for a CI artifact
  python -m crossgrad.check --module=path/to/my_ops.py --tolerance=bitwise
  python -m crossgrad.check --modes=saved_model,jax2tf,export  # export round trips only
  python -m crossgrad.check --jobs=4                  # 4 processes side by side
  python -m crossgrad.check --num_shards=4 --shard_index=0 --json=s0.json  # 1 of 4 CI jobs
  python -m crossgrad.check --merge=s0.json,s1.json,s2.json,s3.json --html=report.html

With --module, an op that passed is not checked again while nothing it depends on changed
(remembered verdicts; --no_cache checks it anyway; docs/loop.md).

The report: a summary grid (op and parameter set x backend and mode, worst error per
cell), the failing rows, then with --all_rows every row.

Exit status: 0 if every check passed (advisory rows, divergences at special values, pass),
1 if one failed, 2 for bad usage (an unknown flag, a bad flag value, a selection that
checks nothing, a missing or mismatched shard report: a one-line message on stderr).
A shard exits as its rows say (a shard that checks nothing passes); --merge of all shards
exits as one run would.
"""

import gc
import json
import os
import shutil
import sys
import time
from typing import MutableMapping

from absl import flags

from crossgrad.backends.common import base
from crossgrad.backends.common import compile_cache
from crossgrad.backends.common import cpu_devices
from crossgrad.checker import compare
from crossgrad.checker import engine
from crossgrad.checker import grid
from crossgrad.checker import html_report
from crossgrad.checker import jobs
from crossgrad.checker import keras_rows
from crossgrad.checker import module_ops
from crossgrad.checker import progress as progress_lib
from crossgrad.checker import search
from crossgrad.checker import selection
from crossgrad.checker import shards
from crossgrad.checker import special_values
from crossgrad.checker import user_warnings
from crossgrad.checker import variants
from crossgrad.checker import verdict_cache
from crossgrad.checker import watch
from crossgrad.checker.diagnosis import causes
from crossgrad.checker.diagnosis import repro
from crossgrad.checker.report import Report
from crossgrad.cli import quiet
from crossgrad.cli import usage
from crossgrad.registry import op_registry
from crossgrad.registry import ops  # pylint: disable=unused-import  # The built-in ops.
from crossgrad.registry.errors import CrossgradError

_OPS = flags.DEFINE_list(
    "ops", None, "Ops to check, built-in ones included; 'all': every registered op (default: "
    "the ops the --module files register, or without --module every built-in op).")
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
_IMPLS = flags.DEFINE_list(
    "impls", None, "Implementations to check per backend: 'emitted' (the op crossgrad emits) "
    "and names of registered kernels (crossgrad.register_kernel; docs/kernels.md); default "
    "all of them.")
_CPU_DEVICES = flags.DEFINE_integer(
    "cpu_devices", None, "Split the host CPU into this many logical devices (cpu:0 ...) "
    "in every backend before checking, to cover multi-device runs without accelerators.")
_MODULE = flags.DEFINE_multi_string(
    "module", [], "Module to import first, to register ops: a dotted name or a .py path "
    "(repeatable). Without --ops the check covers the ops it registers (and the built-in "
    "ops it registers kernels for); one that registers none is a usage error.")
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
_VARIANTS = flags.DEFINE_string(
    "variants", "default", "Variant rows: inputs derived from each op's sample (an axis of "
    "size 1 or dropped, an extra leading axis, a batch of 1, values x10 and x100), the "
    "reference against finite differences and the backends against it: 'default' (eager "
    "and one compiled mode per backend), 'all' (every execution mode) or 'none'.")
_SEARCH = flags.DEFINE_integer(
    "search", 0, "Search N examples per op for an input where the backward is not the "
    "derivative of the forward (Hypothesis: shapes and values drawn from the sample, "
    "shrunk to the smallest failing input; a 'search' row per op; 0: no search).",
    lower_bound=0)
_JSON = flags.DEFINE_string("json", None, "Write the report as JSON to this path.")
_HTML = flags.DEFINE_string("html", None, "Write the report as one self-contained HTML page.")
_REPRO_DIR = flags.DEFINE_string(
    "repro_dir", None, "Write here, per divergence cause, a standalone script that runs the "
    "diverging call in its framework alone and in NumPy, its inputs beside it, and per "
    "failing search row a script that checks the op at its smallest failing input.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed for inputs, cotangents and directions.")
_ALL_ROWS = flags.DEFINE_bool("all_rows", False,
                              "After the grid and the failing rows, print every row.")
_LIST = flags.DEFINE_bool("list", False, "List the registered ops and exit.")
_NUM_SHARDS = flags.DEFINE_integer(
    "num_shards", None, "Split the check into this many shards balanced by expected cost "
    "and run one (--shard_index); default: Bazel's TEST_TOTAL_SHARDS, if set.", lower_bound=1)
_SHARD_INDEX = flags.DEFINE_integer("shard_index", None, "The shard to run, 0 to "
                                    "--num_shards - 1 (default: TEST_SHARD_INDEX).",
                                    lower_bound=0)
_MERGE = flags.DEFINE_list(
    "merge", None, "Shard reports (--json of each shard) to merge into one report, "
    "printed, written by --json/--html and exiting as one run would; runs nothing.")
_JOBS = flags.DEFINE_integer(
    "jobs", None, "Processes to run the check in side by side (shards, merged); default: "
    "one per CPU core, fewer for a small check; 1: in this process.", lower_bound=1)
_COMPILE_CACHE = flags.DEFINE_bool(
    "compile_cache", True, "Keep compiled programs (JAX executables, torch.compile graphs) "
    "in --cache_dir, so the next run compiles only what changed; --nocompile_cache compiles "
    "everything afresh and writes nothing (docs/cross-check.md).")
_WATCH = flags.DEFINE_bool(
    "watch", False, "Stay up with the frameworks loaded: check, then again each time a "
    "--module file changes, only the ops whose definitions changed; an import error is one "
    "message and the watch goes on; Ctrl-C ends it with the last check's exit status.")
_WATCH_RUNS = flags.DEFINE_integer(
    "watch_runs", None, "With --watch: end after this many checks (for scripts and tests).",
    lower_bound=1)
_NO_CACHE = flags.DEFINE_bool(
    "no_cache", False, "Check every selected op, even those remembered green: with --module, "
    "an op that passed is not checked again while nothing it depends on changed (its code "
    "and definition, its kernels, these flags, crossgrad's and the frameworks' versions, the "
    "devices; remembered in --cache_dir/verdicts; docs/loop.md).")
_CACHE_DIR = flags.DEFINE_string(
    "cache_dir", None, f"The compile caches' and remembered verdicts' directory (default: ${compile_cache.ENV}, "
    "else $XDG_CACHE_HOME/crossgrad, else ~/.cache/crossgrad).")


@flags.multi_flags_validator(["num_shards", "shard_index", "jobs", "merge"])
def _shard_flags_agree(values) -> bool:
  count, index, job_count, merge = (values[k] for k in ("num_shards", "shard_index", "jobs",
                                                        "merge"))
  if (count is None) != (index is None):
    raise flags.ValidationError("--num_shards and --shard_index go together")
  if count is not None and index >= count:
    raise flags.ValidationError(f"--shard_index={index} is not below --num_shards={count}")
  if count is not None and (job_count or 1) > 1:
    raise flags.ValidationError("--jobs above 1 runs shards of its own, not with --num_shards")
  if merge and (count is not None or job_count is not None):
    raise flags.ValidationError("--merge runs nothing: no --num_shards, --shard_index, --jobs")
  return True


# One accelerator shared by the frameworks of a process and by the jobs beside it: by
# default JAX takes 75% of a GPU's memory when it starts and TensorFlow all of it, so the
# next framework (or job) on that GPU runs out of memory and its rows fail for no fault of
# the op. The check has each take what it uses; a variable the user set is left alone.
SHARED_ACCELERATOR_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                          "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


def share_accelerators(environ: MutableMapping[str, str] = os.environ) -> None:
  """Sets `SHARED_ACCELERATOR_ENV` in ``environ`` where it is not set, before any
  framework starts (jobs inherit it)."""
  for name, value in SHARED_ACCELERATOR_ENV.items():
    environ.setdefault(name, value)


def main(argv):
  share_accelerators()
  with quiet.captured(enabled=not flags.FLAGS["verbosity"].present) as capture:
    status = _check(argv, capture)
    if status == 1 and capture.path:
      print(f"[crossgrad] framework messages: {capture.keep()} (--verbosity=0 shows them "
            "as they come)", file=sys.stderr)
  jobs.exit_now(status)  # A --jobs job: its report is written, nothing else to wait for.
  return status


def _check(argv, capture: quiet.Capture) -> int:
  if len(argv) > 1:
    return usage.fail(f"[crossgrad] unexpected arguments: {argv[1:]}")
  if _WATCH.value:
    if not _MODULE.value or _MERGE.value or _NUM_SHARDS.value is not None or _LIST.value:
      return usage.fail(CrossgradError(
          "nothing to watch", argument="--watch",
          expected="--module=FILE, without --merge, --num_shards or --list"))
    watching = watch.Watch(_MODULE.value)
    return watching.run(lambda: _check_once(capture, watching), runs=_WATCH_RUNS.value)
  return _check_once(capture)


def _check_once(capture: quiet.Capture, watching: watch.Watch | None = None) -> int:
  """One check: the report printed and written; its exit status."""
  shard = None
  try:
    with user_warnings.collected() as found:
      if _MERGE.value:
        report = shards.merge(_MERGE.value)
      else:
        report, shard = _run(watching)
  except CrossgradError as e:
    return usage.fail(str(e))
  finally:
    user_warnings.report(found, capture)
  if isinstance(report, int):
    return report  # --list, or jobs that could not run.
  # A terminal's width; a log's (a file, a pipe) is `grid.WIDTH`, whatever $COLUMNS says.
  width = shutil.get_terminal_size().columns if sys.stdout.isatty() else grid.WIDTH
  print(grid.text_report(report, all_rows=_ALL_ROWS.value, width=width))
  if _JSON.value:
    with open(_JSON.value, "w") as f:
      f.write(report.to_json() if shard is None else json.dumps(
          {**report.to_dict(), "identity": shard}, indent=2, default=str))
  if _HTML.value:
    html_report.write(_HTML.value, report, all_rows=_ALL_ROWS.value)
  if _REPRO_DIR.value:
    for path in (repro.write_for_rows(report.failures, _REPRO_DIR.value)
                 + search.write_repros(report.failures, _REPRO_DIR.value)):
      print(f"[crossgrad] repro: {path}")
  if shard is not None:
    return 1 if report.failures else 0  # The merged report says whether it checked any.
  if not report.checked:
    return usage.fail(str(selection.nothing_to_check(
        "--ops", "every row is skipped or informational (e.g. a declared gradient with "
        "--backends= empty)")))
  return 0 if report.ok else 1


def _run(watching: watch.Watch | None = None) -> tuple[Report | int, dict | None]:
  """The check's report (or an exit status) and, for a shard, its identity."""
  loaded = (watching.loaded if watching else
            [module_ops.load(module) for module in _MODULE.value])
  if _LIST.value:
    for name in op_registry.names():
      print(f"{name:24s} {op_registry.get(name).doc}")
    return 0, None
  ops = selection.ops(module_ops.chosen(_OPS.value, loaded), flags=True)
  if keras_rows.NAME in _BACKENDS.value:
    keras_rows.register(_MODULE.value)
  for name in _BACKENDS.value:
    if name not in base.names():
      raise selection.unknown("--backends", name, base.names())
  selection.check_dtypes(_DTYPES.value, flags=True)  # What needs no backend, checked here:
  tolerance = compare.check_tolerance(_TOLERANCE.value, "--tolerance")  # once, not per job.
  special = special_values.policy(_SPECIAL.value, "--special")
  variants.policy(_VARIANTS.value, "--variants")
  if _PRECISION.value not in engine.PRECISIONS:
    raise selection.unknown("--precision", _PRECISION.value, engine.PRECISIONS)
  shard = ((_SHARD_INDEX.value, _NUM_SHARDS.value) if _NUM_SHARDS.value is not None
           else shards.from_bazel())
  verdicts = _recall(ops, shard, watching.memory if watching else None)
  if verdicts is not None:
    report = _run_verdicts(ops, verdicts, shard, tolerance, special)
    return report, None
  return _run_ops(ops, shard, tolerance, special)


def _recall(ops, shard, memory) -> verdict_cache.Verdicts | None:
  """The remembered verdicts (`verdict_cache`): on disk for a --module run in this process,
  not a shard, without --no_cache; in ``memory`` (--watch's verdicts so far) where given."""
  on_disk = (_MODULE.value and not _NO_CACHE.value and shard is None and not jobs.in_job())
  if not on_disk and memory is None:
    return None
  folder = (verdict_cache.directory(_CACHE_DIR.value or compile_cache.directory())
            if on_disk else None)
  chosen = {name: flags.FLAGS[name].value for name in shards.ROW_FLAGS
            if name not in ("ops", "module")}
  verdicts = verdict_cache.recall(folder, ops, chosen, memory)
  for names, what in ((verdicts.cached, "since their last green check (cached)"),
                      (verdicts.unchanged, "since the watch's last run")):
    if names:
      print(f"[crossgrad] {len(names)} op{'s' * (len(names) != 1)} unchanged {what}: "
            + ", ".join(names), file=sys.stderr)
  return verdicts


def _run_verdicts(ops, verdicts, shard, tolerance, special) -> Report | int:
  """The check of the ops not remembered, merged with the remembered ones' rows; the new
  green ones remembered."""
  started = time.perf_counter()
  todo = verdicts.todo(ops)
  if not todo:
    return verdicts.merged(ops, None, time.perf_counter() - started)
  report, _ = _run_ops(todo, shard, tolerance, special)
  if isinstance(report, int):
    return report
  verdicts.remember(report)
  return verdicts.merged(ops, report, 0.0)


def _run_ops(ops, shard, tolerance, special) -> tuple[Report | int, dict | None]:
  units = engine.work_units(ops, _DTYPES.value, _BACKENDS.value)
  job_count = 1 if _WATCH.value else _JOBS.value or (1 if shard else jobs.default(
      sum(backend != "numpy" for *_, backend in units)))
  if job_count > 1 and shard:
    raise CrossgradError("--jobs above 1 runs shards of its own, not in a Bazel test shard",
                         argument="--jobs", actual=str(job_count))
  if job_count > 1:
    started = time.perf_counter()
    verbosity = ("verbosity",) if flags.FLAGS["verbosity"].present else ()  # `quiet`.
    report = jobs.run(job_count, jobs.flag_arguments(
        (*shards.ROW_FLAGS, "compile_cache", "cache_dir", *verbosity))
        + ["--ops=" + ",".join(op.name for op in ops)], progress_lib.Progress(units))
    if not isinstance(report, int):
      report.seconds = time.perf_counter() - started
    return _diagnosed(report, ops), None
  report, identity = _run_here(ops, units, shard, tolerance, special)
  return _diagnosed(report, ops), identity


def _diagnosed(report: Report | int, ops) -> Report | int:
  """The report with each failing row's diagnosis (`diagnosis.causes`), timed."""
  if isinstance(report, int) or all(row.diagnosis for row in report.failures):
    return report  # Nothing failed, or the jobs diagnosed their rows.
  started = time.perf_counter()
  report = causes.diagnose(report, ops, seed=_SEED.value)
  seconds = time.perf_counter() - started
  report.seconds += seconds
  print(f"[crossgrad] diagnosis of {len(report.failures)} failing rows: {seconds:.2f} s",
        file=sys.stderr)
  return report


# A process running the check holds about a million long-lived objects (three frameworks,
# their traced and compiled programs), and each full collection walks them all: one per
# 100 collections of generation 1 (Python's default: 10) makes them rare, while younger
# garbage is collected as often as by default.
GC_THRESHOLDS = (700, 10, 100)


def _run_here(ops, units, shard, tolerance, special) -> tuple[Report, dict | None]:
  """The check (one shard of it with ``shard``, (index, count)) run in this process."""
  gc.set_threshold(*GC_THRESHOLDS)
  if _CPU_DEVICES.value is not None:
    cpu_devices.configure(_CPU_DEVICES.value,
                          [b for b in _BACKENDS.value if b != "numpy"])
  cache = (_CACHE_DIR.value or compile_cache.directory()) if _COMPILE_CACHE.value else None
  if cache:
    compile_cache.configure(cache, _BACKENDS.value)
  modules = selection.backends(_BACKENDS.value, flags=True)
  selection.check(ops, modules, _DTYPES.value, _DEVICES.value, _MODES.value, flags=True)
  identity = mine = None
  if shard is not None:
    index, count = shard
    by_name = {op.name: op for op in ops}
    seconds = [shards.expected_seconds(u, by_name, modules, _MODES.value) for u in units]
    mine = shards.plan(units, seconds, count)[index]
    if not jobs.in_job():  # --jobs shows the whole check's progress instead.
      print(f"[crossgrad] shard {index} of {count}: {len(mine)} of the check's {len(units)} "
            "units of work", file=sys.stderr)
    identity = shards.identity(index, count, units,
                               {name: flags.FLAGS[name].value for name in shards.ROW_FLAGS})
  # A --jobs job passes every line on to the process showing the check's progress.
  shown = None if jobs.in_job() else progress_lib.Progress(units if mine is None else mine)
  try:
    report = engine.cross_check(
        ops, backends=_BACKENDS.value, dtypes=_DTYPES.value, devices=_DEVICES.value,
        modes=_MODES.value, seed=_SEED.value, tolerance=tolerance, special=special or False,
        precision=_PRECISION.value, determinism=_DETERMINISM.value, units=mine,
        impls=_IMPLS.value, variants=_VARIANTS.value,
        search=_SEARCH.value,
        progress=shown.line if shown else lambda line: print(line, file=sys.stderr,
                                                              flush=True))
  finally:
    if shown:
      shown.close()
  if cache:
    print(compile_cache.summary(cache, compile_cache.stats(_BACKENDS.value)), file=sys.stderr)
  return report, identity


def run():
  """Console-script entry point (``crossgrad-check``)."""
  usage.console(main, __name__)


if __name__ == "__main__":
  run()
