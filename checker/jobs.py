"""``--jobs``: one check run as shards in processes side by side, merged into one report.

Each job is the check binary (`JOB_MAIN`) with the same flags, ``--num_shards=N
--shard_index=i`` and a JSON report in a temporary folder; the reports are merged
(`shards.merge`) into the report one process would have made. The jobs' progress lines feed
one `progress.Progress`; their other lines go to stderr as they come, each once (every job
starts with the same ones).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from typing import Callable, Sequence

from absl import flags

from crossgrad.backends.common import compile_cache
from crossgrad.checker import progress as progress_lib
from crossgrad.checker import shards
from crossgrad.checker.report import Report

UNITS_PER_JOB = 8  # Fewer backend units than this per job: one process is quicker.
# Set in a job's environment: the job ends with `exit_now` once its report is written.
JOB_ENV = "CROSSGRAD_JOB"
# A job's program: the check binary as its console script starts it (`crossgrad.check` is
# the same `run`, in the package root above this layer).
JOB_MAIN = "from crossgrad.checker.main import run; run()"


def cores() -> int:
  """The CPU cores this process may use."""
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # Not on Linux.
    return os.cpu_count() or 1


def default(backend_units: int, available: int | None = None) -> int:
  """Jobs when ``--jobs`` is not given: one per core, each with at least `UNITS_PER_JOB`
  units of backend work (each job starts its frameworks afresh)."""
  return max(1, min(available or cores(), backend_units // UNITS_PER_JOB))


def flag_arguments(names: Sequence[str], flag_values: flags.FlagValues = flags.FLAGS
                   ) -> list[str]:
  """Command-line arguments giving the flags ``names`` set here (on the command line or
  otherwise off their defaults) the same values."""
  chosen = [flag_values[name] for name in names]
  return [arg for flag in chosen if flag.present or flag.value != flag.default
          for arg in flag.serialize().split("\n") if arg]


def in_job() -> bool:
  """Whether this process is one job of a ``--jobs`` check."""
  return bool(os.environ.get(JOB_ENV))


def exit_now(status: int) -> None:
  """In a job (`JOB_ENV` set): ends the process with ``status`` at once, its output
  flushed, skipping the interpreter's teardown of TensorFlow, JAX and torch (over a
  second of CPU per process, at the end of the slowest job too); elsewhere nothing."""
  if in_job():
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # pylint: disable=protected-access


class _Lines:
  """Takes the jobs' stderr lines, from a thread per job: progress lines to ``progress``,
  compile-cache lines to ``caches`` (`compile_cache.parse`), the others to stderr once each."""

  def __init__(self, progress: progress_lib.Progress):
    self._progress = progress
    self._seen = set()
    self._lock = threading.Lock()
    self.caches: list[tuple[str, dict[str, dict[str, int]]]] = []

  def forward(self, stream, job: int) -> None:
    for line in stream:
      with self._lock:
        if progress_lib.is_engine_line(line):
          self._progress.line(line, source=job)
        elif (cache := compile_cache.parse(line)) is not None:
          self.caches.append(cache)
        elif line not in self._seen:
          self._seen.add(line)
          self._progress.message(line)
    with self._lock:
      self._progress.finish(job)

  def cache_summary(self) -> str | None:
    """One compile-cache line for the check: the jobs' counts added up."""
    if not self.caches:
      return None
    return compile_cache.summary(self.caches[0][0],
                                 compile_cache.added([counts for _, counts in self.caches]))


def run(count: int, arguments: Sequence[str], progress: progress_lib.Progress | None = None,
        say: Callable[[str], None] = lambda line: print(line, file=sys.stderr)
        ) -> Report | int:
  """The merged report of ``count`` jobs running ``arguments`` (the check's flags), or the
  exit status to end with when a job fails to run (2 for a usage error, which the job has
  printed); ``progress`` shows the jobs' progress (default: counting no units)."""
  progress = progress or progress_lib.Progress(())
  lines = _Lines(progress)
  with tempfile.TemporaryDirectory(prefix="crossgrad-jobs-") as folder:
    paths = [os.path.join(folder, f"shard{i}.json") for i in range(count)]
    processes = [subprocess.Popen(
        [sys.executable, "-c", JOB_MAIN, *arguments, f"--num_shards={count}",
         f"--shard_index={i}", "--jobs=1", f"--json={path}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, JOB_ENV: "1"})
                 for i, path in enumerate(paths)]
    readers = [threading.Thread(target=lines.forward, args=(p.stderr, i))
               for i, p in enumerate(processes)]
    for reader in readers:
      reader.start()
    statuses = [p.wait() for p in processes]
    for reader in readers:
      reader.join()
    progress.close()
    if (cache := lines.cache_summary()) is not None:
      say(cache)
    if 2 in statuses:
      return 2  # A usage error, which the jobs printed (once).
    crashed = [(i, s) for i, s in enumerate(statuses) if s not in (0, 1)]
    if crashed:
      for i, status in crashed:
        say(f"[crossgrad] --jobs: job {i} of {count} exited with status {status}")
      return 1
    return shards.merge(paths)
