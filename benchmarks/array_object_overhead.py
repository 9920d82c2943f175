"""What `tensorflow_array_overhead` and `torch_array_overhead` share: the table of an eager
train step per op with and without the array object in op bodies, its summary and flags."""

from __future__ import annotations

import contextlib
from typing import Callable, Sequence

from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.benchmarks import handwritten, timing

FLAGS = flags.FLAGS
HEADER = ("op", "elements", "array object us", "plain tensors us", "ratio", "repeats")
_SCOPES: list = []


@contextlib.contextmanager
def as_is():
  """A scope that changes nothing and costs what a backend's ``native_arrays`` scope does
  (appending to a list and popping it): the array-object side is timed inside it, so both
  sides of the ratio pay a scope."""
  _SCOPES.append(None)
  try:
    yield
  finally:
    _SCOPES.pop()


def run(rows_of: Callable[[str, int, float], tuple], framework: str, target_ratio: float,
        sizes: Sequence[int] = (1_000,), ops: Sequence[str] | None = None,
        budget_s: float = 2.0, json_path: str | None = None) -> dict:
  """``rows_of(name, elements, budget_s)`` for every op with a baseline: printed, summarised
  (geometric mean and largest ratio) and written to ``json_path``."""
  names = [n for n in (ops or cg.names()) if n in handwritten.BASELINES]
  rows = [rows_of(name, size, budget_s) for name in names for size in sizes]
  timing.emit(f"eager {framework} train step: op bodies with the array object vs plain "
              "tensors (ratio = array object / plain)", HEADER, rows, None)
  geomean = float(np.exp(np.mean([np.log(r[4]) for r in rows])))
  print(f"geometric mean ratio {geomean:.3f}, max {max(r[4] for r in rows):.3f}")
  payload = {"title": f"{framework} array object eager overhead",
             "settings": {"sizes": list(sizes), "budget_s": budget_s},
             "summary": {"geomean_ratio": geomean, "max_ratio": max(r[4] for r in rows),
                         "target_ratio": target_ratio},
             "rows": [dict(zip(HEADER, r)) for r in rows]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def define_flags(name: str) -> None:
  timing.define_common_flags(name)
  timing.define_ints("sizes", "Element counts (default 1000).")
  flags.DEFINE_list("ops", None, "Op names (default all with a baseline).")
  flags.DEFINE_float("budget_s", 2.0, "Seconds of timing per op and size.")


def main_running(rows_of: Callable[[str, int, float], tuple], framework: str,
                 target_ratio: float) -> Callable[[list], None]:
  """An absl main running `run` with the flags `define_flags` made."""
  def main(argv):
    del argv
    run(rows_of, framework, target_ratio, FLAGS.sizes or (1_000,), FLAGS.ops, FLAGS.budget_s,
        FLAGS.json)
  return main
