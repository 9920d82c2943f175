"""Warnings raised by a user's op during the check go to the framework-messages log."""

import re
import subprocess
import sys
import warnings

from crossgrad.checker import user_warnings

_OPS = '''
import crossgrad as cg

def forward(xp, x):
  return xp.exp(x), (x,)

def backward(xp, residuals, g):
  (x,) = residuals
  return (g * xp.exp(x),)

cg.register(cg.OpDef("uw_exp", forward, backward,
                     sample=lambda rng: (rng.standard_normal(4) * 400,)))  # exp overflows.
'''


def test_an_ops_overflow_is_logged_not_printed_as_crossgrads(tmp_path):
  path = tmp_path / "uw_ops.py"
  path.write_text(_OPS)
  result = subprocess.run(
      [sys.executable, "-m", "crossgrad.check", f"--module={path}", "--backends=",
       "--no_cache", f"--cache_dir={tmp_path}"], capture_output=True, text=True, timeout=300)
  # exp overflows to inf: its fd row fails, and the diagnosis computes on infs too.
  assert result.returncode == 1, result.stderr
  assert "RuntimeWarning" not in "".join(
      l for l in result.stderr.splitlines(True) if not l.startswith("[crossgrad]"))
  (line,) = [l for l in result.stderr.splitlines() if "warnings raised while checking" in l]
  assert f"e.g. {path}:5: RuntimeWarning: overflow encountered in exp" in line  # forward.
  log = re.search(r"all of them: (\S+)$", line).group(1)
  text = open(log).read()
  assert f"{path}:9: RuntimeWarning: overflow encountered in exp" in text  # backward.
  # Raised outside the op's file too (crossgrad's diagnosis, NumPy), on the op's values.
  assert [l for l in text.splitlines() if "Warning:" in l and str(path) not in l]


def test_lines_counts_each_distinct_warning_once():
  with user_warnings.collected() as found:
    warnings.simplefilter("always")  # Each time, not once per place (the default).
    for _ in range(3):
      warnings.warn("big", RuntimeWarning)
    warnings.warn("other", UserWarning)
  assert len(found) == 4
  text = user_warnings.lines(found)
  assert len(text) == 2 and text[0].endswith("RuntimeWarning: big (3 times)")
  assert text[1].endswith("UserWarning: other")
