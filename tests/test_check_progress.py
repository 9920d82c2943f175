"""The check's progress: one live line on a terminal, one line per op in a log."""

import io
import time

from crossgrad.checker import progress

UNITS = [("relu", "-", "-", "numpy"), ("relu", "-", "float32", "jax"),
         ("relu", "-", "float32", "torch"), ("add", "k=a b", "-", "numpy"),
         ("add", "k=a b", "float32", "jax"), ("add", "k=a b", "float32", "torch")]
LINES = ["[1/2] relu -: finite differences", "  relu - float32 jax cpu:0 eager",
         "  relu - float32 jax cpu:0 jit", "  relu - float32 jax cpu:0 jit: jvp, second order",
         "[2/2] add k=a b: finite differences", "  add k=a b float32 jax cpu:0 eager",
         "[1/2] relu -: sample", "  relu - float32 torch cpu:0 eager",
         "[2/2] add k=a b: sample", "  add k=a b float32 torch cpu:0 compile"]


def _fed(live, lines=LINES):
  stream = io.StringIO()
  shown = progress.Progress(UNITS, stream, live=live, tick_s=None)
  for line in lines:
    shown.line(line)
  return shown, stream


def test_a_log_gets_each_op_line_once_with_the_units_done():
  shown, stream = _fed(live=False, lines=LINES + LINES[:1])
  logged = stream.getvalue().splitlines()
  assert [line.split("  (")[0] for line in logged] == [LINES[0], LINES[4], LINES[6], LINES[8]]
  # Units done as each op line came (each begun unit done once the next begins).
  assert [line.split("  (")[1].split(",")[0] for line in logged] == [
      "0/6 units", "2/6 units", "3/6 units", "4/6 units"]
  assert shown.done == 5  # The last unit is still running.
  shown.finish()
  assert shown.done == 6


def test_a_terminal_gets_one_line_rewritten_in_place():
  shown, stream = _fed(live=True)
  text = stream.getvalue()
  assert "\n" not in text and text.count("\r\x1b[K") == len(LINES)
  assert text.rsplit("\r\x1b[K", 1)[1].startswith(
      "[crossgrad] 5/6 units, 0:00: add k=a b float32 torch cpu:0 compile")
  shown.message("[crossgrad] a warning")  # Stays above the live line, which comes back.
  assert stream.getvalue()[len(text):].startswith("\r\x1b[K[crossgrad] a warning\n\r\x1b[K")
  shown.close()
  assert stream.getvalue().endswith("\r\x1b[K")


def test_the_live_line_is_redrawn_while_no_line_comes():
  stream = io.StringIO()
  shown = progress.Progress(UNITS, stream, live=True, tick_s=0.01)
  shown.line(LINES[1])
  for _ in range(500):
    if stream.getvalue().count("\r\x1b[K") > 3:
      break
    time.sleep(0.01)
  shown.close()
  redraws = stream.getvalue().split("\r\x1b[K")[1:-1]
  assert len(redraws) > 3 and all(r.endswith(LINES[1].strip()) for r in redraws)
  after = stream.getvalue()
  time.sleep(0.05)
  assert stream.getvalue() == after  # Closed: no more redraws.


def test_units_done_across_jobs():
  stream = io.StringIO()
  shown = progress.Progress(UNITS, stream, live=True, tick_s=None)
  shown.line(LINES[0], source=0)
  shown.line(LINES[4], source=1)
  assert shown.done == 0  # Each job is running its first unit.
  shown.line(LINES[1], source=0)
  shown.finish(1)
  assert shown.done == 2


def test_engine_lines_and_messages():
  assert all(progress.is_engine_line(line) for line in LINES)
  assert not progress.is_engine_line("[crossgrad] --modes: unknown value\n")
