"""Timing helpers shared by the benchmarks: interleaved medians, environment, output."""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
from typing import Any, Callable, Mapping

import numpy as np


def interleaved_medians(candidates: Mapping[str, Callable[[], Any]], repeats: int,
                        warmup: int = 1) -> dict[str, float]:
  """Median seconds of each callable, run round-robin so drift hits all alike."""
  for fn in candidates.values():
    for _ in range(warmup):
      fn()
  samples = {name: [] for name in candidates}
  for _ in range(repeats):
    for name, fn in candidates.items():
      start = time.perf_counter()
      fn()
      samples[name].append(time.perf_counter() - start)
  return {name: statistics.median(values) for name, values in samples.items()}


def environment() -> dict[str, Any]:
  env = {"python": sys.version.split()[0], "platform": platform.platform(),
         "processor": platform.processor() or platform.machine(), "numpy": np.__version__}
  for name in ("tensorflow", "jax", "jaxlib"):
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
    with open(path, "w") as f:
      json.dump({"title": title, "environment": environment(), **(extra or {}),
                 "rows": [dict(zip(header, row)) for row in rows]}, f, indent=2)
    print(f"wrote {path}")


def _fmt(value: Any) -> str:
  if isinstance(value, float):
    return f"{value:.4g}"
  return str(value)
