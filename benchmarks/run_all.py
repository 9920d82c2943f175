r"""Every benchmark in one run: tables on stdout, one JSON file each plus a summary.

  python -m crossgrad.benchmarks.run_all [--quick] [--out_dir=out]

Runs every benchmark binary in `BENCHMARKS`, `check_cost` first (its framework start-up
baseline needs a process that has not loaded TensorFlow or JAX yet), each with its own
full (or ``--quick``) settings, writing ``<out_dir>/<name>.json`` and
``<out_dir>/summary.json`` (the headline figures and the environment). `PENDING` names
the binaries not run yet, and every other module of this package is a library
(`LIBRARIES`); tests/test_benchmarks_smoke.py keeps the three lists complete.
"""

from __future__ import annotations

import importlib
import os
import time
from typing import Sequence

from absl import app
from absl import flags

from crossgrad.benchmarks import timing

FLAGS = flags.FLAGS

# Binaries: each has settings(quick) and run(..., json_path); check_cost must come first.
BENCHMARKS = ("check_cost", "overhead", "tf1_idiom", "dispatch", "bernoulli_mask",
              "tf1_port_overhead")
# Benchmark binaries not run yet: sparse_conv gets settings()/run() with its absl rewrite.
PENDING = ("sparse_conv",)
# Modules the benchmarks import; not binaries.
LIBRARIES = ("handwritten", "hlo", "sparse_loops", "timing")


def _headlines(results: dict) -> dict:
  """The figures the issue sets targets for, read from each benchmark's payload."""
  out = {}
  if "overhead" in results:
    out["overhead_max_ratio_xla"] = results["overhead"]["summary"]["max_ratio_xla"]
    out["overhead_geomean_ratio"] = results["overhead"]["summary"]["geomean_ratio"]
    out["same_structure"] = all(r["same structure"] == "yes" for r in results["overhead"]
                                ["structure"] if r["program"].endswith("HLO"))
  if "tf1_idiom" in results:
    out["tf1_idiom_speedup"] = {f'{r["elements"]} {r["TF1 idiom"]} vs {r["crossgrad"]}':
                                r["speedup"] for r in results["tf1_idiom"]["rows"]}
  if "check_cost" in results:
    out["cross_check_seconds"] = {r["elements"]: r["seconds"]
                                  for r in results["check_cost"]["scaling"]}
    out["compute_gradient_largest_measured"] = (
        results["check_cost"]["compute_gradient_largest_measured"])
  if "dispatch" in results:
    out["dispatch_ratio"] = {f'{r["op"]} {r["framework"]} {r["call"]}': r["ratio"]
                             for r in results["dispatch"]["rows"]}
  if "bernoulli_mask" in results:
    out["bernoulli_mask_ratio"] = {f"{framework} {noise}": row["ratio"] for framework, rows
                                   in results["bernoulli_mask"]["frameworks"].items()
                                   for noise, row in rows.items()}
  if "tf1_port_overhead" in results:
    out["tf1_port_overhead_ratio"] = {r["mode"]: r["ratio"]
                                      for r in results["tf1_port_overhead"]["rows"]}
  return out


def run(quick: bool = False, out_dir: str = "out",
        benchmarks: Sequence[str] = BENCHMARKS) -> dict:
  """Runs the benchmarks in-process; returns ``{name: payload}`` plus a summary."""
  results, seconds = {}, {}
  for name in benchmarks:
    module = importlib.import_module(f"crossgrad.benchmarks.{name}")
    print(f"\n=== {name} ===", flush=True)
    start = time.perf_counter()
    results[name] = module.run(json_path=os.path.join(out_dir, f"{name}.json"),
                               **module.settings(quick))
    seconds[name] = time.perf_counter() - start
  summary = {"title": "crossgrad benchmarks: headline figures", "quick": quick,
             "seconds": seconds, "headlines": _headlines(results)}
  timing.write_json(os.path.join(out_dir, "summary.json"), summary)
  return {**results, "summary": summary}


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_bool("quick", False, "Every benchmark's quick mode.")
  flags.DEFINE_string("out_dir", "out", "Where the JSON files go.")
  flags.DEFINE_list("only", None, f"Subset of {','.join(BENCHMARKS)}.")


def main(argv):
  del argv  # Unused.
  run(FLAGS.quick, FLAGS.out_dir, FLAGS.only or BENCHMARKS)


if __name__ == "__main__":
  define_flags()
  app.run(main)
