"""``--watch``: a check that stays up and re-checks the ops whose definitions changed."""

import queue
import signal
import subprocess
import sys
import threading
import time

from crossgrad.checker import watch

_OPS = '''
import crossgrad as cg

def forward(xp, x):
  return 3.0 * x, ()

def good_backward(xp, residuals, g):
  return (3.0 * g,)

def bad_backward(xp, residuals, g):
  return (2.0 * g,)

def sample(rng):
  return (rng.standard_normal(4),)

cg.register(cg.OpDef("wt_good", forward, good_backward, sample=sample))
cg.register(cg.OpDef("wt_bad", forward, bad_backward, sample=sample))
'''
WAIT_SECONDS = 120  # For each expected line; a watch that stops answering fails, not hangs.


class _Lines:
  """The subprocess's stdout and stderr lines, as they come, read with bounded waits."""

  def __init__(self, process):
    self.lines: queue.Queue = queue.Queue()
    for stream in (process.stdout, process.stderr):
      threading.Thread(target=lambda s=stream: [self.lines.put(l.rstrip("\n")) for l in s],
                       daemon=True).start()

  def until(self, *texts: str) -> list[str]:
    """Lines up to the first containing each of ``texts`` (stdout and stderr are read by
    threads of their own: in any order)."""
    seen, deadline = [], time.monotonic() + WAIT_SECONDS
    while not all(any(t in l for l in seen) for t in texts):
      try:
        seen.append(self.lines.get(timeout=max(0.0, deadline - time.monotonic())))
      except queue.Empty:
        raise AssertionError(f"no lines with {texts} in {WAIT_SECONDS} s; got {seen}") from None
    return seen


def _summaries(lines):
  return [l for l in lines if l.startswith("crossgrad cross-check:")]


def test_watch_rechecks_the_edited_op_survives_a_syntax_error_and_ends_on_ctrl_c(tmp_path):
  path = tmp_path / "wt_ops.py"
  path.write_text(_OPS)
  process = subprocess.Popen(
      [sys.executable, "-m", "crossgrad.check", f"--module={path}", "--backends=",
       f"--cache_dir={tmp_path / 'cache'}", "--no_cache", "--watch"],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
  try:
    lines = _Lines(process)
    idle = ("crossgrad cross-check:", "watch: waiting for changes")
    seen = lines.until(*idle)
    assert "14 checks, 6 failing" in _summaries(seen)[-1], seen
    path.write_text(_OPS.replace("(2.0 * g,)", "(3.0 * g,)"))  # Same size, same second.
    seen = lines.until(*idle)
    assert any("1 op unchanged since the watch's last run: wt_good" in l for l in seen), seen
    assert any("[1/1] wt_bad" in l for l in seen), seen  # Only the edited op ran.
    assert "14 checks, 0 failing" in _summaries(seen)[-1], seen
    path.write_text(path.read_text() + "\ndef broken(:\n")
    seen = lines.until("did not load", "watch: waiting for changes")
    line_number = len(_OPS.replace("(2.0", "(3.0").splitlines()) + 2
    (message,) = [l for l in seen if "did not load" in l]
    assert f"{path}:{line_number}: SyntaxError: " in message, seen
    path.write_text(_OPS.replace("(2.0 * g,)", "(3.0 * g,)"))
    seen = lines.until(*idle, "unchanged since the watch's last run")
    assert any("2 ops unchanged since the watch's last run" in l for l in seen), seen
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=WAIT_SECONDS) == 0  # The last verdict: green.
  finally:
    if process.poll() is None:
      process.kill()
      process.wait()


def test_watch_runs_ends_after_that_many_checks_with_the_last_status(tmp_path, monkeypatch):
  # Before the first check, unchanged, then changing twice (a truncated write, then the
  # whole file) before it settles: one more check, of the settled file.
  stamps = iter([[(1, 1)], [(1, 1)], [(2, 0)], [(2, 0)], [(3, 9)], [(3, 9)]])
  watching = watch.Watch([str(tmp_path / "w.py")])
  monkeypatch.setattr(watching, "load", lambda: True)
  monkeypatch.setattr(watching, "stamps", lambda: next(stamps))
  statuses = iter([1, 0])
  assert watching.run(lambda: next(statuses), runs=2, sleep=lambda s: None) == 0
  assert next(stamps, None) is None  # Every stamp read: it waited for the file to settle.


def test_watch_without_a_module_file_is_a_usage_error():
  result = subprocess.run([sys.executable, "-m", "crossgrad.check", "--watch"],
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 2
  assert result.stderr.startswith("[crossgrad] --watch: nothing to watch: expected --module")
