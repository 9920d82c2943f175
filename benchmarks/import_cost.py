r"""What `import crossgrad` costs against `import numpy`, each in fresh interpreters.

  python -m crossgrad.benchmarks.import_cost [--quick] [--repeats=15]

Each sample is one fresh ``python -c`` timing its own import with `time.perf_counter`
(the interpreter's start-up left out), the two statements interleaved round by round
after one untimed run of each, which writes every module's bytecode cache to a temporary
folder (``PYTHONPYCACHEPREFIX``; ``PYTHONDONTWRITEBYTECODE`` dropped): both imports read
bytecode, as from an installed package (a checkout without caches compiles crossgrad's
sources at every import, about 60 ms more on 2 cores). The figure is the median for
crossgrad over the median for NumPy (target: at most 1.5), with the quartiles of the
per-round ratios; each row also counts the modules its import added and names any of
`HEAVY` among them (crossgrad's import should bring none: they load on first use). Where
the time goes: ``python -X importtime -c "import crossgrad"``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

from absl import flags

from crossgrad.benchmarks import timing
from crossgrad.cli import usage

FLAGS = flags.FLAGS

STATEMENTS = ("crossgrad", "numpy")  # Ours, then the baseline.
HEAVY = ("triton", "tensorflow", "jax", "jaxlib", "torch", "keras",
         "crossgrad.checker.engine")
TARGET_RATIO = 1.5
REPEATS = 15

_CODE = """import sys, time
before = set(sys.modules)
start = time.perf_counter()
import {module}
seconds = time.perf_counter() - start
added = set(sys.modules) - before
import json
print(json.dumps([seconds, len(added), sorted(added & set({heavy!r}))]))
"""


def fresh_import(module: str, cache: str) -> tuple[float, int, list[str]]:
  """Seconds to import ``module`` in a fresh interpreter (bytecode caches in ``cache``),
  how many modules that added, and which of `HEAVY` were among them."""
  code = _CODE.format(module=module, heavy=HEAVY)
  env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, env={**env, "PYTHONPYCACHEPREFIX": cache})
  seconds, added, heavy = json.loads(out.stdout.strip().splitlines()[-1])
  return float(seconds), int(added), list(heavy)


def samples(repeats: int) -> dict[str, list[tuple[float, int, list[str]]]]:
  """`fresh_import` of each of `STATEMENTS`, ``repeats`` rounds after one untimed round;
  the order alternates between rounds."""
  found = {module: [] for module in STATEMENTS}
  with tempfile.TemporaryDirectory() as cache:
    for module in STATEMENTS:
      fresh_import(module, cache)  # Bytecode caches written, files in the page cache.
    order = list(STATEMENTS)
    for _ in range(repeats):
      for module in order:
        found[module].append(fresh_import(module, cache))
      order.reverse()
  return found


def settings(quick: bool) -> dict:
  """run()'s arguments for a full or a quick run."""
  return {"repeats": 2 if quick else REPEATS}


def run(repeats: int = REPEATS, json_path: str | None = None) -> dict:
  """Times both imports, prints the table, writes JSON; returns the JSON payload."""
  found = samples(repeats)
  seconds = {m: [s for s, _, _ in runs] for m, runs in found.items()}
  medians = {m: statistics.median(values) for m, values in seconds.items()}
  ours, baseline = STATEMENTS
  q1, q3 = timing.ratio_quartiles(seconds[ours], seconds[baseline])
  header = ("import", "median ms", "lowest ms", "highest ms", "modules added", "heavy loaded")
  rows = [(f"import {m}", medians[m] * 1e3, min(seconds[m]) * 1e3, max(seconds[m]) * 1e3,
           found[m][-1][1], sorted({h for _, _, heavy in found[m] for h in heavy}))
          for m in STATEMENTS]
  ratio = medians[ours] / medians[baseline]
  title = (f"import {ours} / import {baseline}, fresh interpreters, median of {repeats}: "
           f"{ratio:.3g} (target <= {TARGET_RATIO})")
  timing.emit(title, header, rows, None)
  payload = {"title": "import crossgrad against import numpy (fresh interpreters)",
             "settings": {"repeats": repeats}, "ratio": ratio, "ratio_q1": q1,
             "ratio_q3": q3, "target_ratio": TARGET_RATIO, "met": ratio <= TARGET_RATIO,
             "rows": [dict(zip(header, r)) for r in rows]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("import_cost")
  flags.DEFINE_integer("repeats", None, f"Fresh interpreters per import (default {REPEATS}).")


def main(argv) -> int:
  del argv  # Unused.
  kwargs = settings(FLAGS.quick)
  if FLAGS.repeats:
    kwargs["repeats"] = FLAGS.repeats
  payload = run(json_path=FLAGS.json, **kwargs)
  return 1 if payload["rows"][0]["heavy loaded"] else 0  # crossgrad brought one in.


if __name__ == "__main__":
  define_flags()
  usage.run(main)
