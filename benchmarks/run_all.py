r"""Every benchmark in one run: tables on stdout, one JSON file each plus a summary.

  python -m crossgrad.benchmarks.run_all [--quick] [--out_dir=out]

Runs every benchmark binary in `BENCHMARKS`, `check_cost` first (its framework start-up
baseline needs a process that has not loaded TensorFlow or JAX yet), each with its own
full (or ``--quick``) settings, writing ``<out_dir>/<name>.json`` and
``<out_dir>/summary.json`` (the headline figures, the environment, the date and the
command). `PENDING` names the binaries not run yet, `TOOLS` the programs that are no
benchmark (`docs_tables` renders docs/benchmarks.md from this JSON), and every other module
of this package is a library (`LIBRARIES`); tests/test_benchmarks_smoke.py keeps the four
lists complete.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import sys
import time
from typing import Sequence

from absl import flags

from crossgrad.benchmarks import timing
from crossgrad.cli import usage

FLAGS = flags.FLAGS

# Binaries: each has settings(quick) and run(..., json_path); check_cost must come first.
BENCHMARKS = ("check_cost", "import_cost", "overhead", "tf1_idiom", "dispatch",
              "bernoulli_mask", "tf1_port_overhead", "torch_overhead", "sparse_conv",
              "sparse_network", "sparse_rulebook")
# Benchmark binaries not run yet.
# keras_step: its own subprocess per Keras backend, run alone; tensorflow_array_overhead,
# torch_array_overhead: the array object's eager cost, development measurements with no
# settings() yet; kernels: registered native kernels against their emitted ops, run where the
# kernels' hardware is (on CPU it times the Pallas and Triton interpreters).
# loop: fresh processes of the check binary, its --watch and pytest, run alone.
PENDING = ("keras_step", "tensorflow_array_overhead", "torch_array_overhead", "kernels", "loop",
           "port_overhead")
# Programs that are no benchmark: array_api_conformance runs the Array API test suite
# (given its checkout); docs_tables writes docs/benchmarks.md from run_all's JSON.
TOOLS = ("array_api_conformance", "docs_tables")
# Modules the benchmarks import; not binaries.
LIBRARIES = ("array_api_modes", "array_api_no_shrink_plugin", "array_api_tensorshape_plugin",
             "array_object_overhead", "handwritten", "handwritten_checked", "handwritten_torch",
             "hlo", "sparse_layer", "sparse_loops", "timing")


def _headlines(results: dict) -> dict:
  """The headline figures (those with targets among them), read from each benchmark's
  payload."""
  out = {}
  if "overhead" in results:
    out["overhead_rows_over_target"] = results["overhead"]["summary"].get("rows_over_target")
    out["overhead_max_ratio_xla"] = results["overhead"]["summary"]["max_ratio_xla"]
    out["overhead_max_ratio_eager_graph"] = (
        results["overhead"]["summary"].get("max_ratio_eager_graph"))
    out["overhead_geomean_ratio"] = results["overhead"]["summary"]["geomean_ratio"]
    out["reverse_mode_vs_custom_vjp_max_ratio"] = (
        results["overhead"]["summary"]["max_ratio_custom_vjp"])
    out["same_hlo_as_custom_vjp"] = results["overhead"]["summary"]["same_hlo_as_custom_vjp"]
    out["same_structure"] = all(r["same structure"] == "yes" for r in results["overhead"]
                                ["structure"] if r["program"].endswith("HLO"))
  if "import_cost" in results:
    out["import_cost_ratio"] = results["import_cost"]["ratio"]
  if "tf1_idiom" in results:
    out["tf1_idiom_speedup"] = {f'{r["elements"]} {r["TF1 idiom"]} vs {r["crossgrad"]}':
                                r["speedup"] for r in results["tf1_idiom"]["rows"]}
  if "check_cost" in results:
    out["cross_check_seconds"] = {r["elements"]: r["seconds"]
                                  for r in results["check_cost"]["scaling"]}
    out["compute_gradient_largest_measured"] = (
        results["check_cost"]["compute_gradient_largest_measured"])
    out["check_cost"] = {r["figure"]: r["value"] for r in results["check_cost"]["check_cost"]}
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


def _kept(out_dir: str, names: Sequence[str]) -> dict:
  """The JSON earlier runs left in ``out_dir``, by benchmark: a run of some benchmarks
  (``--only``) keeps the others' headline figures."""
  kept = {}
  for name in names:
    path = os.path.join(out_dir, f"{name}.json")
    if os.path.exists(path):
      with open(path, encoding="utf-8") as f:
        kept[name] = json.load(f)
  return kept


def accelerators() -> list[str]:
  """The non-CPU devices of the frameworks this process has loaded (``[]``: none)."""
  found = set()
  if "jax" in sys.modules:
    found |= {f"{d.platform}: {d.device_kind}" for d in sys.modules["jax"].devices()
              if d.platform != "cpu"}
  if "tensorflow" in sys.modules:
    config = sys.modules["tensorflow"].config
    found |= {f"{d.device_type.lower()}: "
              f"{config.experimental.get_device_details(d).get('device_name', d.name)}"
              for d in config.list_physical_devices() if d.device_type != "CPU"}
  torch = sys.modules.get("torch")
  if torch is not None and torch.cuda.is_available():
    found |= {f"gpu: {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())}
  return sorted(found)


def run(quick: bool = False, out_dir: str = "out",
        benchmarks: Sequence[str] = BENCHMARKS, command: str | None = None) -> dict:
  """Runs the benchmarks in-process; returns ``{name: payload}`` plus a summary (with the
  date, the command line and the accelerators: what `docs_tables` puts on the page)."""
  results, seconds = {}, {}
  for name in benchmarks:
    module = importlib.import_module(f"crossgrad.benchmarks.{name}")
    print(f"\n=== {name} ===", flush=True)
    start = time.perf_counter()
    results[name] = module.run(json_path=os.path.join(out_dir, f"{name}.json"),
                               **module.settings(quick))
    seconds[name] = time.perf_counter() - start
  summary = {"title": "crossgrad benchmarks: headline figures", "quick": quick,
             "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "command": command, "accelerators": accelerators(), "seconds": seconds,
             "headlines": _headlines({**_kept(out_dir, BENCHMARKS), **results})}
  timing.write_json(os.path.join(out_dir, "summary.json"), summary)
  return {**results, "summary": summary}


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_bool("quick", False, "Every benchmark's quick mode.")
  flags.DEFINE_string("out_dir", "out", "Where the JSON files go.")
  flags.DEFINE_list("only", None, f"Subset of {','.join(BENCHMARKS)}.")


def main(argv):
  del argv  # Unused.
  run(FLAGS.quick, FLAGS.out_dir, FLAGS.only or BENCHMARKS,
      command=" ".join(["python -m crossgrad.benchmarks.run_all", *sys.argv[1:]]))


if __name__ == "__main__":
  define_flags()
  usage.run(main)
