r"""The check in a user's loop, on one op of a user's module (docs/loop.md).

  python -m crossgrad.benchmarks.loop [--quick] [--backends=jax,torch] [--repeats=3]

Every figure is wall-clock seconds of what a user waits for, set against the baseline
measured in the same run: the cold one-op check, ``python -m crossgrad.check
--module=FILE --dtypes=float32 --no_cache`` in a fresh process (frameworks imported and
started, the compile caches warm from an untimed first run, so the baseline is what
re-running the binary after each edit costs today). Against it:

* ``--watch`` re-check after an edit: from saving the edited file (written whole, as
  editors save) to the summary line of the watch's next check (the edited op re-checked,
  frameworks already loaded); target <= 0.3;
* remembered run: the same command without ``--no_cache``, the op's green verdict
  remembered (the frameworks are not even imported); target <= 0.1;
* the pytest plugin: ``pytest --crossgrad=FILE`` with the same selection, a fresh process.

Medians of ``--repeats`` runs each, interleaved where they are separate processes.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from typing import Sequence

from absl import flags
import numpy as np

from crossgrad.backends.common import base
from crossgrad.benchmarks import timing
from crossgrad.cli import usage

FLAGS = flags.FLAGS

OP = '''
import crossgrad as cg

SLOPE = {slope}

def forward(xp, x):
  return xp.where(x > 0, x, SLOPE * x), (x,)

def backward(xp, residuals, g):
  (x,) = residuals
  return (xp.where(x > 0, g, SLOPE * g),)

cg.register(cg.OpDef("loop_leaky", forward, backward,
                     sample=lambda rng: (rng.standard_normal(64) + 0.1,)))
'''
TARGETS = {"watch re-check after an edit": 0.3, "remembered run": 0.1}
WAIT_SECONDS = 600


def _write(path: str, slope: float) -> None:
  """Writes the module whole (a temporary file renamed over it), as editors save."""
  with open(path + ".tmp", "w") as f:
    f.write(OP.format(slope=slope))
  os.replace(path + ".tmp", path)


def _check_command(path: str, cache: str, backends: Sequence[str], *extra: str) -> list[str]:
  return [sys.executable, "-m", "crossgrad.check", f"--module={path}", "--dtypes=float32",
          f"--backends={','.join(backends)}", f"--cache_dir={cache}", *extra]


def _seconds(command: list[str], cwd: str) -> float:
  start = time.perf_counter()
  done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)
  seconds = time.perf_counter() - start
  if done.returncode != 0:
    raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
  return seconds


def _watch_seconds(path: str, cache: str, backends: Sequence[str], edits: int) -> list[float]:
  """Seconds from each edit of ``path`` to the summary line of the watch's next check."""
  process = subprocess.Popen(_check_command(path, cache, backends, "--no_cache", "--watch"),
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             cwd=os.path.dirname(path))
  lines: queue.Queue = queue.Queue()
  threading.Thread(target=lambda: [lines.put(l) for l in process.stdout], daemon=True).start()

  def idle():
    deadline = time.monotonic() + WAIT_SECONDS
    while not lines.get(timeout=max(0.0, deadline - time.monotonic())).startswith(
        "crossgrad cross-check:"):
      pass

  try:
    idle()
    seconds = []
    for edit in range(edits):
      start = time.perf_counter()
      _write(path, 0.02 + 0.01 * edit)
      idle()
      seconds.append(time.perf_counter() - start)
    return seconds
  finally:
    process.kill()
    process.wait()


def settings(quick: bool) -> dict:
  """run()'s arguments for a full or a quick run (NumPy alone: no framework starts)."""
  return {"repeats": 1, "backends": []} if quick else {"repeats": 3}


def run(repeats: int = 3, backends: Sequence[str] | None = None,
        json_path: str | None = None) -> dict:
  """Runs the benchmark, prints its table, writes JSON; returns the JSON payload."""
  backends = base.default_backends() if backends is None else list(backends)
  with tempfile.TemporaryDirectory() as folder:
    path, cache = os.path.join(folder, "loop_ops.py"), os.path.join(folder, "cache")
    _write(path, 0.01)
    cold_command = _check_command(path, cache, backends, "--no_cache")
    remembered_command = _check_command(path, cache, backends)
    _seconds(remembered_command, folder)  # Untimed: the compile caches and the verdict.
    plugin = [sys.executable, "-m", "pytest", "-p", "crossgrad.testing.pytest_plugin",
              "-p", "no:cacheprovider", "-q", f"--crossgrad={path}",
              f"--crossgrad-backends={','.join(backends)}", "--crossgrad-dtypes=float32"]
    samples = timing.interleaved_samples({
        "cold": lambda: _seconds(cold_command, folder),
        "remembered": lambda: _seconds(remembered_command, folder),
        "plugin": lambda: _seconds(plugin, folder)}, repeats, warmup=0)
    times = {name: float(np.median(values)) for name, values in samples.items()}
    times["watch"] = float(np.median(_watch_seconds(path, cache, backends, max(repeats, 2))))
  cold = times["cold"]
  rows = [("cold one-op check (baseline)", cold, 1.0, "-"),
          ("watch re-check after an edit", times["watch"], times["watch"] / cold,
           TARGETS["watch re-check after an edit"]),
          ("remembered run", times["remembered"], times["remembered"] / cold,
           TARGETS["remembered run"]),
          ("pytest --crossgrad (same op)", times["plugin"], times["plugin"] / cold, "-")]
  header = ("run", "seconds", "ratio to cold", "target")
  title = (f"the check in the loop: one op, backends {', '.join(backends) or 'numpy only'}, "
           f"float32 (median of {repeats})")
  timing.emit(title, header, rows, None)
  payload = {"title": title, "backends": backends, "repeats": repeats,
             "rows": [dict(zip(header, row)) for row in rows],
             "within_targets": all(r[2] <= r[3] for r in rows if r[3] != "-")}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def define_flags():
  timing.define_common_flags("loop")
  flags.DEFINE_list("backends", None, "Backends (default: the check's).")
  flags.DEFINE_integer("repeats", 3, "Runs of each figure (medians).")


def main(argv):
  del argv  # Unused.
  chosen = settings(FLAGS.quick)
  if FLAGS.backends is not None:
    chosen["backends"] = FLAGS.backends
  if not FLAGS.quick:
    chosen["repeats"] = FLAGS.repeats
  run(json_path=FLAGS.json, **chosen)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
