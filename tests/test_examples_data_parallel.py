"""The data-parallel example: sharded runs match single-device runs and a hand-derived step."""

import json
import os
import subprocess
import sys

import numpy as np

from crossgrad.examples import data_parallel as dp


def _numpy_step(x, target, w1, w2):
  """Loss and one SGD step, derived by hand (STE: the clipped identity's derivative)."""
  q = np.clip(np.round(w1 / 0.25), -8, 7) * 0.25
  z = x @ q
  h = np.where(z > 0, z, 0.2 * z)
  y = h @ w2
  loss = np.mean((y - target) ** 2)
  dy = 2 * (y - target) / y.size
  dw2 = h.T @ dy
  dz = np.where(z > 0, 1.0, 0.2) * (dy @ w2.T)
  dw1 = (x.T @ dz) * ((w1 >= -2.0) & (w1 <= 1.75))
  return loss, [w1 - dp.LEARNING_RATE * dw1, w2 - dp.LEARNING_RATE * dw2]


def test_one_step_matches_the_hand_derived_update():
  x, target, weights = dp.problem(0)
  loss, expected = _numpy_step(x.astype(np.float64), target.astype(np.float64),
                               *[w.astype(np.float64) for w in weights])
  for train in (dp.train_jax, dp.train_tensorflow):
    losses, got, devices = train((x, target), weights, steps=1, sharded=False)
    assert devices == 1
    np.testing.assert_allclose(losses[0], loss, rtol=1e-5)
    for g, e in zip(got, expected):
      np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_sharded_runs_match_single_device_runs_on_four_devices():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  done = subprocess.run(
      [sys.executable, "-m", "crossgrad.examples.data_parallel", "--steps=4", "--devices=4"],
      capture_output=True, text=True, check=True, timeout=300, env=env)
  lines = done.stdout.strip().splitlines()
  import jax  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cpu_only = not tf.config.list_physical_devices("GPU") and jax.devices()[0].platform == "cpu"
  counts = dict(item.rsplit(" ", 1) for item in lines[0][len("devices: "):].split(", "))
  assert counts["tensorflow/single"] == counts["jax/single"] == "1"
  if cpu_only:  # Else the example uses the accelerators there are.
    assert counts["tensorflow/sharded"] == counts["jax/sharded"] == "4"
  curves = np.array([[float(v) for v in line.split()[1:]] for line in lines[2:6]])
  np.testing.assert_allclose(curves, curves[:, :1].repeat(4, axis=1), rtol=1e-5)
  assert np.all(np.diff(curves[:, 0]) < 0)  # Training makes progress.
  x, target, weights = dp.problem(0)
  np.testing.assert_allclose(curves[0, 0], _numpy_step(x, target, *weights)[0], rtol=1e-5)
  for line in lines[6:8]:
    assert float(line.split("weights ")[1].split(",")[0]) <= 1e-5, line


def test_two_processes_per_framework_match_one_process(tmp_path):
  """--processes=2: weights within 1e-6 of the single-process run after 3 steps, and the
  processes' Bernoulli mask rows bitwise the single-process masks, in every framework."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  out = tmp_path / "dp.json"
  # Nine processes start their frameworks on CI's 2 cores beside the other test worker: one
  # may print nothing for longer than the 45 s default without being hung.
  done = subprocess.run([sys.executable, "-m", "crossgrad.examples.data_parallel",
                         "--processes=2", "--steps=3", "--idle_timeout=240", f"--json={out}"],
                        capture_output=True, text=True, timeout=600, env=env)
  assert done.returncode == 0, done.stderr[-3000:]  # The launcher names the failed process.
  results = json.loads(out.read_text())
  assert set(results) == {"jax", "tensorflow", "torch"}
  x, target, weights = dp.problem(0)
  first_loss_without_mask = _numpy_step(x, target, *weights)[0]
  for name, r in results.items():
    assert r["processes"] == 2, name
    assert r["max_weight_diff"] <= 1e-6, (name, r)
    assert r["masks_equal"] and r["processes_agree"], (name, r)
    assert abs(r["final_loss"] - r["single_final_loss"]) <= 1e-6, (name, r)
    assert r["final_loss"] != first_loss_without_mask  # The mask is applied.
