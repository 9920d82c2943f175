"""The attention-digits example runs in its short mode and the two frameworks agree."""

import os
import subprocess
import sys

import numpy as np
import pytest

from crossgrad.examples import attention_digits


@pytest.mark.parametrize("noise", ["shared", "threefry"])
def test_short_run_with_the_same_noise(tmp_path, noise):
  path = os.path.join(tmp_path, "curves.png")
  curves = attention_digits.run(short=True, noise=noise, out=path)
  with open(path, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
  tf_c, jax_c = curves["tensorflow"], curves["jax"]
  for key in ("train_loss", "test_loss", "test_accuracy"):
    assert len(tf_c[key]) == len(jax_c[key]) == 2
    # Same weights, batches and masks: JAX is the independent reference for TF.
    np.testing.assert_allclose(tf_c[key], jax_c[key], atol=1e-4)
  assert tf_c["test_accuracy"][-1] > 0.3  # Chance is 0.1.
  assert tf_c["train_loss"][-1] < tf_c["train_loss"][0]


def test_command_line_short_run_with_each_frameworks_own_sampler(tmp_path):
  path = os.path.join(tmp_path, "c.png")
  done = subprocess.run(
      [sys.executable, "-m", "crossgrad.examples.attention_digits", "--short",
       "--noise=framework", f"--out={path}"],
      capture_output=True, text=True, check=True, timeout=600)
  lines = done.stdout.strip().splitlines()
  assert lines[0].split()[:3] == ["epoch", "tf", "train"]
  epochs = [[float(v) for v in line.split()] for line in lines[1:3]]
  assert [row[0] for row in epochs] == [1, 2]
  tf_train, jax_train = [row[1] for row in epochs], [row[2] for row in epochs]
  assert np.all(np.isfinite(tf_train + jax_train))
  assert epochs[-1][5] > 0.3 and epochs[-1][6] > 0.3  # Test accuracy; chance is 0.1.
  # Different masks (Philox against Threefry) give visibly different curves.
  assert tf_train != jax_train
  assert os.path.getsize(path) > 0
