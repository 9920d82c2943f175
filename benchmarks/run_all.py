r"""Every benchmark in one run: tables on stdout, one JSON file each plus a summary.

  python -m crossgrad.benchmarks.run_all [--quick] [--out_dir=out]

Runs `check_cost` first (its framework start-up baseline needs a process that has not
loaded TensorFlow or JAX yet), then `overhead`, `tf1_idiom` and `dispatch`, each with its
own full (or ``--quick``) settings, writing ``<out_dir>/<name>.json`` and
``<out_dir>/summary.json`` (the headline figures and the environment).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from typing import Sequence

from crossgrad.benchmarks import timing

BENCHMARKS = ("check_cost", "overhead", "tf1_idiom", "dispatch")


def _headlines(results: dict) -> dict:
  """The figures the issue sets targets for, read from each benchmark's payload."""
  out = {}
  if "overhead" in results:
    out["overhead_max_ratio_xla"] = results["overhead"]["summary"]["max_ratio_xla"]
    out["overhead_geomean_ratio"] = results["overhead"]["summary"]["geomean_ratio"]
    out["reverse_mode_vs_custom_vjp_max_ratio"] = (
        results["overhead"]["summary"]["max_ratio_custom_vjp"])
    out["same_hlo_as_custom_vjp"] = results["overhead"]["summary"]["same_hlo_as_custom_vjp"]
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


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].strip())
  parser.add_argument("--quick", action="store_true", help="Every benchmark's quick mode.")
  parser.add_argument("--out_dir", default="out", help="Where the JSON files go.")
  parser.add_argument("--only", default=None,
                      help=f"Comma-separated subset of {','.join(BENCHMARKS)}.")
  args = parser.parse_args(argv)
  run(args.quick, args.out_dir, args.only.split(",") if args.only else BENCHMARKS)
  return 0


if __name__ == "__main__":
  sys.exit(main())
