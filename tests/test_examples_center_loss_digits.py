"""The center-loss digits example in its short mode: TF, JAX and PyTorch agree, plots are
written."""

import os
import subprocess
import sys

import numpy as np

from crossgrad.examples import center_loss_digits


def _initial_loss(setup):
  """The first batch's loss from the shared initial weights, in NumPy."""
  (k1, b1), (k2, b2), (k3, b3) = [(k.astype(np.float64), b) for k, b in setup.weights]
  batch = setup.batches[0]
  x, y = setup.x_train[batch].astype(np.float64), setup.y_train[batch]
  f = np.maximum(x @ k1 + b1, 0) @ k2 + b2
  z = f @ k3 + b3
  log_p = z - z.max(axis=1, keepdims=True)
  log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
  return -log_p[np.arange(len(y)), y].sum() + setup.lam * 0.5 * np.sum(f**2)  # Centers 0.


def test_short_run_agrees_across_frameworks_and_plots(tmp_path):
  lam = 0.1
  results = center_loss_digits.run(epochs=1, lam=lam, alpha=0.5)
  assert set(results) == {0.0, lam}
  for weight, by_framework in results.items():
    assert tuple(by_framework) == center_loss_digits.frameworks()
    tf_losses = np.array(by_framework["tensorflow"].losses)
    assert len(tf_losses) == 1297 // 64
    setup = center_loss_digits.make_setup(1, weight, 0.5)
    np.testing.assert_allclose(tf_losses[0], _initial_loss(setup), rtol=1e-5)
    for name, result in by_framework.items():
      np.testing.assert_allclose(result.losses, tf_losses, rtol=1e-4, err_msg=name)
      np.testing.assert_allclose(result.centers, by_framework["tensorflow"].centers,
                                 rtol=1e-3, atol=1e-5, err_msg=name)
  for result in results[0.0].values():
    assert not np.any(result.centers)  # lambda = 0: the centers never move.
  labels = center_loss_digits.make_setup(0, 0.0, 0.0).y_test
  paths = center_loss_digits.save_plots(results, labels, str(tmp_path))
  for path in paths:
    with open(path, "rb") as f:
      assert f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 10_000


def test_compactness_of_a_hand_computed_layout():
  # Two classes, means (0, 0) and (4, 0) at distance 4; every point 1 from its mean.
  features = np.array([[0, 1], [0, -1], [4, 1], [4, -1]], np.float64)
  labels = np.array([0, 0, 1, 1])
  assert center_loss_digits.compactness(features, labels) == 0.25


def test_command_line_short_mode(tmp_path):
  done = subprocess.run(
      [sys.executable, "-m", "crossgrad.examples.center_loss_digits", "--epochs=1",
       f"--out_dir={tmp_path}"], capture_output=True, text=True, check=True, timeout=600)
  for name in center_loss_digits.frameworks()[1:]:
    assert f"max |tf - {name}|" in done.stdout
  for name in ("features", "curves"):
    assert os.path.exists(tmp_path / f"center_loss_digits_{name}.png")
