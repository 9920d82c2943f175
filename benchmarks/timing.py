"""Helpers shared by the benchmarks: interleaved medians, flags, environment, output.

Every benchmark is an absl binary written the same way: ``define_flags()`` (called only
when the module runs as the program, so importing a benchmark defines no flag), ``main(argv)``
reading the flags, ``settings(quick)`` and ``run(..., json_path=None)``, a plain
function that `run_all` and the tests call with explicit arguments.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from absl import flags

from crossgrad.cli import flag_help


def interleaved_samples(candidates: Mapping[str, Callable[[], Any]], repeats: int,
                        warmup: int = 1, number: int = 1,
                        warm: int = 0) -> dict[str, list[float]]:
  """Seconds per call of each callable, one sample per round, run round-robin so drift hits
  all alike (each sample times ``number`` calls, after ``warm`` untimed calls of the same
  one): sample i of every candidate comes from the same round."""
  for fn in candidates.values():
    for _ in range(warmup):
      fn()
  samples = {name: [] for name in candidates}
  order = list(candidates.items())
  for _ in range(repeats):
    for name, fn in order:
      for _ in range(warm):
        fn()
      start = time.perf_counter()
      for _ in range(number):
        fn()
      samples[name].append((time.perf_counter() - start) / number)
    order.reverse()  # Alternate who goes first, so neither always runs on a warm cache.
  return samples


def interleaved_medians(candidates: Mapping[str, Callable[[], Any]], repeats: int,
                        warmup: int = 1, number: int = 1, warm: int = 0) -> dict[str, float]:
  """Median seconds per call of each callable (`interleaved_samples`)."""
  samples = interleaved_samples(candidates, repeats, warmup, number, warm)
  return {name: statistics.median(values) for name, values in samples.items()}


def calibrated_samples(candidates: Mapping[str, Callable[[], Any]], budget_s: float,
                       min_repeats: int = 5, max_repeats: int = 200,
                       sample_s: float = 2e-3) -> dict[str, list[float]]:
  """`interleaved_samples` with calls batched to ``sample_s`` per sample and as many
  repeats as fit ``budget_s`` (within the bounds)."""
  for fn in candidates.values():  # Warm-up (compilation, caches), then one timed call each.
    fn()
    fn()
  slowest = 0.0
  for fn in candidates.values():
    start = time.perf_counter()
    fn()
    slowest = max(slowest, time.perf_counter() - start)
  number = max(1, int(sample_s / max(slowest, 1e-9)))
  per_round = slowest * number * len(candidates)
  repeats = int(min(max_repeats, max(min_repeats, budget_s / max(per_round, 1e-9))))
  return interleaved_samples(candidates, repeats, warmup=0, number=number)


def calibrated_medians(candidates: Mapping[str, Callable[[], Any]], budget_s: float,
                       min_repeats: int = 5, max_repeats: int = 200,
                       sample_s: float = 2e-3) -> tuple[dict[str, float], int]:
  """Medians of `calibrated_samples` and the repeat count."""
  samples = calibrated_samples(candidates, budget_s, min_repeats, max_repeats, sample_s)
  return ({name: statistics.median(values) for name, values in samples.items()},
          len(next(iter(samples.values()))))


def ratio_quartiles(ours: Sequence[float], theirs: Sequence[float]) -> tuple[float, float]:
  """First and third quartiles of the per-round ratios ours / theirs (paired samples of
  `interleaved_samples`): how much the ratio moves with the machine's load."""
  q1, _, q3 = statistics.quantiles([a / b for a, b in zip(ours, theirs)], n=4)
  return q1, q3


def define_common_flags(name: str):
  """``--quick`` and ``--json`` (default ``out/<name>.json``), shared by the benchmarks."""
  flags.DEFINE_bool("quick", False, "Smallest sizes, few repeats.")
  flags.DEFINE_string("json", f"out/{name}.json", "Where to write the JSON.")
  flag_help.list_in_help(__name__)  # The benchmark's --help lists them.


def parse_ints(text: str) -> list[int]:
  """``"1e3,1000000"`` -> ``[1000, 1000000]``."""
  return [int(float(v)) for v in text.split(",") if v]


class _IntsParser(flags.ArgumentParser):
  """Comma-separated integers, ``1e6`` allowed."""

  syntactic_help = "comma-separated integers (1e6 allowed)"

  def parse(self, argument):
    return parse_ints(argument) if isinstance(argument, str) else list(argument)

  def flag_type(self):
    return "ints"


def define_ints(name: str, help_text: str, flag_values: flags.FlagValues = flags.FLAGS):
  """A ``--name=1e3,1000000`` flag read as ``[1000, 1000000]`` (default None)."""
  flags.DEFINE(_IntsParser(), name, None, help_text, flag_values,
               flags.CsvListSerializer(","))
  flag_help.list_in_help(__name__, flag_values=flag_values)


def _cpu_model() -> str:
  try:
    with open("/proc/cpuinfo") as f:
      return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                  "")
  except OSError:
    return ""


def environment() -> dict[str, Any]:
  """The machine, its load and the library versions loaded in this process."""
  env = {"python": sys.version.split()[0], "platform": platform.platform(),
         "processor": _cpu_model() or platform.processor() or platform.machine(),
         "cpus": os.cpu_count(), "numpy": np.__version__}
  if hasattr(os, "getloadavg"):
    env["load_average_1m"] = os.getloadavg()[0]
  for name in ("tensorflow", "jax", "jaxlib", "torch"):
    module = sys.modules.get(name)
    if module is not None:
      env[name] = getattr(module, "__version__", "?")
  return env


def emit(title: str, header: tuple[str, ...], rows: list[tuple], path: str | None,
         extra: Mapping[str, Any] | None = None):
  """Prints a table and, with ``path``, writes rows, environment and extras as JSON."""
  cells = [tuple(map(str, header))] + [tuple(_fmt(v) for v in row) for row in rows]
  widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
  print(title)
  for row in cells:
    print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
  if path:
    write_json(path, {"title": title, **(extra or {}),
                      "rows": [dict(zip(header, row)) for row in rows]})


def write_json(path: str, payload: Mapping[str, Any]):
  """Writes ``payload`` with the environment added, creating the folder."""
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  with open(path, "w") as f:
    json.dump({"environment": environment(), **payload}, f, indent=2)
  print(f"wrote {path}")


def _fmt(value: Any) -> str:
  if isinstance(value, float):
    return f"{value:.4g}"
  return str(value)
