r"""What checking costs: imports, the full cross-check, and how checking one op scales.

  python -m crossgrad.benchmarks.check_cost [--quick] [--sizes=1000,1000000,16000000] [--jobs=1,2]
      [--threads=1]

Baselines measured in the same run: `import numpy` / `import tensorflow` / `import jax`
for the imports (fresh interpreters, interleaved); one reference forward + VJP for the
1M-element directional check (so its cost reads in forward+backward passes); framework
start-up for the full cross-check; and `tf.test.compute_gradient` (dense theoretical and
numerical Jacobians) for `cross_check(["leaky_relu"], inputs=[x])` at each size. Where
`compute_gradient` is not feasible (its two float64 n x n Jacobians outgrow the memory cap,
or it would run past the time cap) its time is extrapolated from the sizes it ran at and
marked ``estimated``.

The full check as users run it, ``python -m crossgrad.check`` in fresh processes: cold (an
empty compile cache) then warm (the cache the cold run left; docs/cross-check.md, "Compile
caches across runs"), per ``--jobs`` count (`JOBS`). The `check_cost` table sets these
figures against their targets: cold <= 60 s, warm <= 0.4 x cold, and one op's check
at 1M elements <= 2 x at 1K for each backend alone (every row; `scaling_by_backend`): the
median of `BACKEND_RUNS` fresh processes, with the lowest and highest ratio (on a shared
machine one run's ratio varies widely).
``--threads``: torch's intra-op threads in this process and in torch's own scaling process
(`backend_scaling_rows`: each backend in a fresh one; default: torch's choice); one
keeps a machine's other processes, which leave torch's second thread waiting for a core,
from swamping torch's 1M rows there (TensorFlow and JAX fix their thread pools at start-up).
Each timed check at one size starts with a full garbage collection, outside its time
(`timed_check`): with three frameworks loaded (about a million objects) a full collection
takes long, and one that the earlier runs' garbage had made due would otherwise land
in whichever run comes next, whatever its size; one the timed run's own garbage makes due
still counts.
"""

from __future__ import annotations

import collections
import gc
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.benchmarks import timing
from crossgrad.checker import finite_diff
from crossgrad.cli import usage

FLAGS = flags.FLAGS

SIZES = (1_000, 1_000_000, 16_000_000)
QUICK_SIZES = (1_000,)
JOBS = (1, 2)  # --jobs counts of the cold/warm full check (1: one process).
IMPORTS = (("crossgrad", "numpy"), ("crossgrad; crossgrad.tensorflow", "tensorflow"),
           ("crossgrad; crossgrad.jax", "jax"))
PROBE_START = 64  # compute_gradient's smallest probe.
BACKEND_SIZES = (1_000, 1_000_000)  # Each backend alone: 1M should cost <= 2x 1K.
BACKEND_RUNS = 3  # Fresh processes per backend; the median ratio is kept.


def _import_seconds(statement: str) -> float:
  code = f"import time; t = time.perf_counter(); import {statement}; print(time.perf_counter() - t)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  return float(out.stdout.strip().splitlines()[-1])


def import_rows(repeats: int, frameworks: bool = True) -> list[tuple]:
  """`import crossgrad` (and its framework backends) against the bare imports."""
  rows = []
  for ours, theirs in IMPORTS if frameworks else IMPORTS[:1]:
    samples = {ours: [], theirs: []}
    for _ in range(repeats):  # Interleaved, fresh interpreters.
      for statement in samples:
        samples[statement].append(_import_seconds(statement))
    ours_s, theirs_s = (float(np.median(samples[s])) for s in (ours, theirs))
    rows.append((f"import {ours}", ours_s, f"import {theirs}", theirs_s, ours_s / theirs_s))
  return rows


def leaky_relu_inputs(size: int, seed: int = 0) -> np.ndarray:
  z = np.random.default_rng(seed).standard_normal(size)
  return z + 0.05 * np.sign(z)  # Off the kink at 0, so finite differences are clean.


def directional_row(size: int, repeats: int) -> tuple:
  op = cg.get("leaky_relu")

  def f(inputs):
    return [cg.numpy.get(op)(*inputs)]

  def vjp(inputs, cotangents):
    return list(cg.numpy.vjp(op, *inputs)[1](cotangents[0]))

  inputs, rng = [leaky_relu_inputs(size)], np.random.default_rng(1)
  medians = timing.interleaved_medians({
      "forward+vjp": lambda: vjp(inputs, f(inputs)),
      "directional": lambda: finite_diff.directional_error(f, vjp, inputs, rng),
  }, repeats)
  return (f"directional check, {size:,} elements", medians["directional"], "one forward+VJP",
          medians["forward+vjp"], medians["directional"] / medians["forward+vjp"])


def full_check_row() -> tuple:
  start = time.perf_counter()
  cg.cross_check(cg.names()[:1], backends=["tensorflow", "jax"], dtypes=["float32"],
                 modes=["eager"])  # Imports and initialises both frameworks.
  warmup = time.perf_counter() - start
  start = time.perf_counter()
  report = cg.cross_check()
  total = time.perf_counter() - start
  return (f"cross-check, {len(cg.names())} built-in ops, {len(report.rows)} checks", total,
          "framework start-up", warmup, total / warmup), report.ok


def check_seconds(cache_dir: str, jobs: int) -> tuple[float, bool]:
  """Wall-clock seconds of ``python -m crossgrad.check`` (every built-in op) in a fresh
  process with its compile caches in ``cache_dir``; and whether it passed."""
  command = [sys.executable, "-m", "crossgrad.check", f"--cache_dir={cache_dir}",
             f"--jobs={jobs}"]  # Given always: the default is one job per core.
  start = time.perf_counter()
  done = subprocess.run(command, capture_output=True, text=True, check=False)
  return time.perf_counter() - start, done.returncode == 0


def cache_rows(jobs: Sequence[int]) -> list[dict]:
  """The full check cold (an empty compile cache) then warm (the cache the cold run left),
  for each ``--jobs`` count; the warm run against the cold one."""
  rows = []
  for n in jobs:
    with tempfile.TemporaryDirectory() as cache:
      cold, cold_ok = check_seconds(cache, n)
      warm, warm_ok = check_seconds(cache, n)
    rows.append({"jobs": n, "status": "ok" if cold_ok and warm_ok else "FAIL",
                 "cold s": cold, "warm s": warm, "warm / cold": warm / cold})
  return rows


def timed_check(**kwargs) -> tuple[float, "cg.Report"]:
  """Seconds of ``cg.cross_check(["leaky_relu"], **kwargs)`` and its report, after a full
  garbage collection (untimed) that leaves no earlier run's garbage to this one."""
  gc.collect()
  start = time.perf_counter()
  report = cg.cross_check(["leaky_relu"], **kwargs)
  return time.perf_counter() - start, report


def scaling_rows(sizes: Sequence[int], start_up: bool = True) -> list[tuple]:
  """`cross_check(["leaky_relu"], inputs=[x])` at each size, split by where time went.
  ``start_up``: a check at 16 elements first, so that the frameworks' start-up and first
  compilations stay out of the timed rows (without it the first row includes them)."""
  rows, n_params = [], len(cg.get("leaky_relu").param_sets)
  if start_up:
    cg.cross_check(["leaky_relu"], inputs=[leaky_relu_inputs(16)])
  for size in sizes:
    x = leaky_relu_inputs(size)
    total, report = timed_check(inputs=[x])
    spent = collections.Counter()
    for row in report.rows:  # forward and vjp rows share one evaluation's seconds.
      if row.check != "vjp":
        spent[row.backend] += row.seconds
    rows.append((size, len(report.rows), "ok" if report.ok else "FAIL", total, total / n_params,
                 spent["numpy"], spent["tensorflow"], spent["jax"],
                 total - sum(spent.values())))
    del x, report
  return rows


def backend_scaling_row(backend: str, sizes: Sequence[int], threads: int | None = None) -> tuple:
  """`cross_check(["leaky_relu"], inputs=[x], backends=[backend])` in this process, started
  up at 16 elements, then once at each size (its compilation included, as in a user's
  first check of an op at that size); the largest size's time over the smallest's."""
  if threads and backend == "torch":
    import torch  # pylint: disable=g-import-not-at-top
    torch.set_num_threads(threads)
  cg.cross_check(["leaky_relu"], inputs=[leaky_relu_inputs(16)], backends=[backend])
  seconds, ok = {}, True
  for size in sizes:
    seconds[size], report = timed_check(inputs=[leaky_relu_inputs(size)], backends=[backend])
    ok = ok and report.ok
  return (backend, len(report.rows), "ok" if ok else "FAIL",
          *(seconds[n] for n in sizes), seconds[max(sizes)] / seconds[min(sizes)])


def _fresh_backend_scaling_row(backend: str, sizes: Sequence[int],
                               threads: int | None) -> tuple:
  """`backend_scaling_row` in a fresh process with empty compile caches: no size compiled
  before, nothing left by this process's earlier runs."""
  code = ("import json; from crossgrad.benchmarks import check_cost; print(json.dumps("
          f"check_cost.backend_scaling_row({backend!r}, {list(sizes)!r}, {threads!r})))")
  with tempfile.TemporaryDirectory() as cache:
    environ = {**os.environ, "CROSSGRAD_CACHE_DIR": cache, "TORCHINDUCTOR_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=environ)
  return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def backend_scaling_rows(sizes: Sequence[int] = BACKEND_SIZES, threads: int | None = None,
                         runs: int = BACKEND_RUNS) -> list[tuple]:
  """Per backend, the run with the median ratio of ``runs`` fresh-process
  `backend_scaling_row` runs (rounds over all backends, so that a slow spell of a shared
  machine does not land on one backend alone), with the lowest and highest ratio."""
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  backends = base.default_backends()
  runs_of = {backend: [] for backend in backends}
  for _ in range(runs):
    for backend in backends:
      runs_of[backend].append(_fresh_backend_scaling_row(backend, sizes, threads))
  rows = []
  for backend, measured in runs_of.items():
    measured.sort(key=lambda row: row[-1])
    _, checks, _, *seconds, ratio = measured[len(measured) // 2]
    status = "ok" if all(row[2] == "ok" for row in measured) else "FAIL"
    rows.append((backend, checks, status, runs, measured[0][-1], measured[-1][-1],
                 *seconds, ratio))
  return rows


def _compute_gradient_seconds(size: int) -> float:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  fn, x = cg.tensorflow.get("leaky_relu"), tf.constant(leaky_relu_inputs(size))
  start = time.perf_counter()
  tf.test.compute_gradient(fn, [x])
  return time.perf_counter() - start


def jacobian_bytes(size: int) -> int:
  return 2 * size * size * 8  # Theoretical and numerical float64 Jacobians.


def compute_gradient_times(sizes: Sequence[int], cap_s: float, cap_bytes: int) -> dict:
  """``{size: (seconds, measured?)}`` for the asked sizes and a ladder of probes.

  Probes 64, 256, ... below the smallest asked size, then that size times 4, 16, ...,
  measuring while the predicted time and the Jacobians' memory fit the caps; the first
  probe that does not fit and every larger asked size get an estimate, extrapolated
  with the growth exponent of the last two measurements (at least linear, so a lower
  bound when the cost grows faster).
  """
  smallest, largest = min(sizes), max(sizes)
  ladder = ({PROBE_START * 4 ** k for k in range(16) if PROBE_START * 4 ** k < smallest}
            | {smallest * 4 ** k for k in range(16) if smallest * 4 ** k <= largest})
  measured, exponent, result, stopped = [], 1.0, {}, False
  for size in sorted(ladder | set(sizes)):
    if len(measured) >= 2:
      (n0, t0), (n1, t1) = measured[-2:]
      exponent = max(1.0, math.log(t1 / t0) / math.log(n1 / n0))
    predicted = measured[-1][1] * (size / measured[-1][0]) ** exponent if measured else 0.0
    if not stopped and predicted <= cap_s and jacobian_bytes(size) <= cap_bytes:
      measured.append((size, _compute_gradient_seconds(size)))
      result[size] = (measured[-1][1], True)
    elif not stopped or size in sizes:
      result[size], stopped = (predicted, False), True
  return {"times": result, "exponent": exponent,
          "largest_measured": measured[-1][0] if measured else None}


def targets(cache: list[dict], by_backend: Sequence[tuple] = ()) -> list[dict]:
  """The figures against their targets: cold and warm full checks (per ``--jobs``),
  and checking leaky_relu at 1M elements against 1K, each backend alone (every row; the
  `backend_scaling_rows` at `BACKEND_SIZES`)."""
  rows = []
  for row in cache:
    jobs = f", --jobs={row['jobs']}" if row["jobs"] > 1 else ""
    rows += [{"figure": f"cold full check s{jobs}", "value": row["cold s"], "target": 60.0},
             {"figure": f"warm / cold{jobs}", "value": row["warm / cold"], "target": 0.4}]
  rows += [{"figure": f"leaky_relu check, 1M / 1K elements, {row[0]} alone",
            "value": row[-1], "target": 2.0} for row in by_backend]
  return [dict(r, met=r["value"] <= r["target"]) for r in rows]


def settings(quick: bool) -> dict:
  """run()'s arguments for a full or a quick run (no framework imports, no full check, no
  start-up check before the scaling rows: it proves the benchmark runs, not its figures)."""
  if quick:
    return {"sizes": QUICK_SIZES, "repeats": 1, "frameworks": False, "full_check": False,
            "cap_s": 2.0, "by_backend": False, "jobs": (), "start_up": False}
  return {"sizes": SIZES, "repeats": 5, "frameworks": True, "full_check": True, "cap_s": 20.0,
          "by_backend": True, "jobs": JOBS, "start_up": True}


def run(sizes: Sequence[int] = SIZES, repeats: int = 5, frameworks: bool = True,
        full_check: bool = True, cap_s: float = 20.0, cap_bytes: int = 2 << 30,
        jobs: Sequence[int] = JOBS, json_path: str | None = None,
        by_backend: bool = True, threads: int | None = None, start_up: bool = True) -> dict:
  """Runs the benchmark, prints its tables, writes JSON; returns the JSON payload."""
  if threads:
    import torch  # pylint: disable=g-import-not-at-top  # Only where threads are asked for.
    torch.set_num_threads(threads)
  rows = import_rows(repeats, frameworks)
  rows.append(directional_row(min(1_000_000, max(sizes)), max(repeats, 3)))
  full_ok = True
  if full_check:
    full_row, full_ok = full_check_row()
    rows.append(full_row)
  cache = cache_rows(jobs)  # Fresh processes: run while this one is small.
  scaling = scaling_rows(sizes, start_up)
  by_backend = backend_scaling_rows(threads=threads) if by_backend else []
  gradient = compute_gradient_times(sizes, cap_s, cap_bytes)
  for size, _, _, total, *_ in scaling:
    seconds, measured = gradient["times"][size]
    how = "" if measured else f" (estimated; {jacobian_bytes(size) / 1e9:.3g} GB of Jacobians)"
    rows.append((f"cross-check leaky_relu, {size:,} elements", total,
                 f"tf.test.compute_gradient{how}", seconds, total / seconds))
  header = ("what", "seconds", "baseline", "baseline s", "ratio")
  scaling_header = ("elements", "checks", "status", "seconds", "per param set", "numpy fd s",
                    "tensorflow s", "jax s", "reference+compare s")
  backend_header = ("backend", "checks", "status", "runs", "lowest ratio", "highest ratio",
                    *(f"{n:,} elements s" for n in BACKEND_SIZES), "ratio")
  gradient_header = ("elements", "compute_gradient s", "measured", "jacobians GB")
  gradient_rows = [(n, s, "yes" if m else "no (estimated)", jacobian_bytes(n) / 1e9)
                   for n, (s, m) in sorted(gradient["times"].items())]
  timing.emit("crossgrad check cost (seconds; ratio = measured / baseline)", header, rows, None)
  timing.emit("cross_check(['leaky_relu'], inputs=[x]) by size: both frameworks, every mode, "
              "float32 and float64, both parameter sets", scaling_header, scaling, None)
  if by_backend:
    timing.emit("cross_check(['leaky_relu'], inputs=[x], backends=[backend]): each backend "
                "alone, every row; ratio = largest size / smallest, the median run's",
                backend_header, by_backend, None)
  timing.emit("tf.test.compute_gradient (TF only, float64, eager) by size", gradient_header,
              gradient_rows, None)
  figures = targets(cache, by_backend)
  for title, records in (("python -m crossgrad.check, fresh processes", cache),
                         ("targets", figures)):
    if records:
      timing.emit(title, tuple(records[0]), [tuple(r.values()) for r in records], None)
  print(f"compute_gradient ran up to {gradient['largest_measured']:,} elements (caps: "
        f"{cap_s} s, {cap_bytes / 1e9:.3g} GB of Jacobians); larger sizes are estimates; "
        f"its time grew as n^{gradient['exponent']:.2f}")
  payload = {"title": "crossgrad check cost (seconds; ratio = measured / baseline)",
             "cross_check_ok": full_ok and all(r[2] == "ok" for r in scaling + by_backend)
                               and all(r["status"] == "ok" for r in cache),
             "settings": {"sizes": list(sizes), "repeats": repeats, "frameworks": frameworks,
                          "full_check": full_check, "cap_s": cap_s,
                          "cap_bytes": cap_bytes, "jobs": list(jobs), "threads": threads,
                          "start_up": start_up},
             "check_cost": figures,
             "check_runs": cache,
             "rows": [dict(zip(header, r)) for r in rows],
             "scaling": [dict(zip(scaling_header, r)) for r in scaling],
             "scaling_by_backend": [dict(zip(backend_header, r)) for r in by_backend],
             "compute_gradient": [dict(zip(gradient_header, r)) for r in gradient_rows],
             "compute_gradient_exponent": gradient["exponent"],
             "compute_gradient_largest_measured": gradient["largest_measured"]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("check_cost")
  timing.define_ints("sizes", "Elements for the leaky_relu scaling (default 1e3,1e6,16e6).")
  flags.DEFINE_integer("repeats", None, "Import repetitions.")
  timing.define_ints("jobs", "--jobs counts of the cold/warm full check (default 1,2).")
  flags.DEFINE_integer("threads", None, "torch's intra-op threads (default: torch's choice).")


def main(argv) -> int:
  del argv  # Unused.
  kwargs = settings(FLAGS.quick)
  kwargs.update({k: v for k, v in (("sizes", FLAGS.sizes), ("repeats", FLAGS.repeats),
                                   ("jobs", FLAGS.jobs)) if v})
  payload = run(json_path=FLAGS.json, threads=FLAGS.threads, **kwargs)
  return 0 if payload["cross_check_ok"] else 1


if __name__ == "__main__":
  define_flags()
  usage.run(main)
