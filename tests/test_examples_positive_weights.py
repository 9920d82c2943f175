"""The positive-weight example in its short mode, against SciPy's NNLS solver."""

import os
import subprocess
import sys

import numpy as np

from crossgrad.examples import positive_weights


def test_short_run_solves_nnls_in_both_frameworks(tmp_path):
  problem, fits, (nnls, lstsq) = positive_weights.run(steps=100)
  x, y = problem.x.astype(np.float64), problem.y.astype(np.float64)
  first = 0.5 * np.mean(np.sum((x @ problem.w_init.T - y) ** 2, axis=1))
  assert lstsq.min() < 0  # The constraint matters for this data.
  for fit in fits.values():
    np.testing.assert_allclose(fit.losses[0], first, rtol=1e-5)
    assert fit.min_applied_weight >= 0.0
    np.testing.assert_allclose(fit.applied, nnls, atol=1e-3)
    # Exactly NNLS's zero set stopped at or below zero.
    np.testing.assert_array_equal(fit.kernel <= 0, nnls == 0)
  np.testing.assert_allclose(fits["tensorflow"].losses, fits["jax"].losses, rtol=1e-5)
  path = positive_weights.save_plot(fits, problem, nnls, lstsq, str(tmp_path))
  with open(path, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 10_000


def test_command_line_short_mode(tmp_path):
  done = subprocess.run(
      [sys.executable, "-m", "crossgrad.examples.positive_weights", "--steps=20",
       f"--out_dir={tmp_path}"], capture_output=True, text=True, check=True, timeout=600)
  assert "scipy NNLS" in done.stdout
  assert os.path.exists(tmp_path / "positive_weights.png")
