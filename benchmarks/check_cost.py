r"""What checking costs: `import crossgrad`, the full cross-check, a 1M-element directional check.

  python -m crossgrad.benchmarks.check_cost --json=out/check_cost.json

Baselines measured in the same run: `import numpy` for the import, one reference
forward + VJP for the directional check (so its cost reads in forward+backward passes).
"""

import os
import subprocess
import sys
import time

import numpy as np
from absl import app
from absl import flags

import crossgrad as cg
from crossgrad.benchmarks import timing
from crossgrad.registry import finite_diff

_JSON = flags.DEFINE_string("json", "out/check_cost.json", "Where to write the JSON.")
_REPEATS = flags.DEFINE_integer("repeats", 7, "Timed repetitions (medians are reported).")
_SIZE = flags.DEFINE_integer("size", 1_000_000, "Elements in the directional check.")


def _import_seconds(module: str) -> float:
  code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  return float(out.stdout)


def _leaky_relu_problem(size: int):
  op = cg.get("leaky_relu")
  z = np.random.default_rng(0).standard_normal(size)
  x = z + 0.05 * np.sign(z)

  def f(inputs):
    return [cg.numpy.get(op)(*inputs)]

  def vjp(inputs, cotangents):
    return list(cg.numpy.vjp(op, *inputs)[1](cotangents[0]))

  return f, vjp, [x]


def main(argv):
  del argv
  rows = []
  imports = {"numpy": [], "crossgrad": []}
  for _ in range(_REPEATS.value):  # Interleaved, fresh interpreters.
    for module in imports:
      imports[module].append(_import_seconds(module))
  numpy_s, crossgrad_s = (float(np.median(imports[m])) for m in ("numpy", "crossgrad"))
  rows.append(("import crossgrad", crossgrad_s, "import numpy", numpy_s, crossgrad_s / numpy_s))

  f, vjp, inputs = _leaky_relu_problem(_SIZE.value)
  rng = np.random.default_rng(1)
  medians = timing.interleaved_medians({
      "forward+vjp": lambda: vjp(inputs, f(inputs)),
      "directional": lambda: finite_diff.directional_error(f, vjp, inputs, rng),
  }, _REPEATS.value)
  rows.append((f"directional check, {_SIZE.value:,} elements", medians["directional"],
               "one forward+VJP", medians["forward+vjp"],
               medians["directional"] / medians["forward+vjp"]))

  start = time.perf_counter()
  cg.cross_check(cg.names()[:1], backends=["tensorflow", "jax"], dtypes=["float32"],
                 modes=["eager"])  # Imports and initialises both frameworks.
  warmup = time.perf_counter() - start
  start = time.perf_counter()
  report = cg.cross_check()
  total = time.perf_counter() - start
  per_row = total / len(report.rows)
  rows.append((f"cross-check, {len(cg.names())} built-in ops, {len(report.rows)} checks", total,
               "framework start-up", warmup, total / warmup))
  os.makedirs(os.path.dirname(_JSON.value) or ".", exist_ok=True)
  timing.emit("crossgrad check cost (seconds; ratio = measured / baseline)",
              ("what", "seconds", "baseline", "baseline s", "ratio"), rows, _JSON.value,
              {"cross_check_ok": report.ok, "seconds_per_check": per_row})
  return 0 if report.ok else 1


if __name__ == "__main__":
  app.run(main)
