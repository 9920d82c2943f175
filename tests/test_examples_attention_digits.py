"""The attention-digits example runs in its short mode and the two frameworks agree."""

import os

import numpy as np
import pytest

from crossgrad.examples import attention_digits


@pytest.mark.parametrize("noise", ["shared", "threefry"])
def test_short_run_with_the_same_noise(tmp_path, noise):
  path = os.path.join(tmp_path, "curves.png")
  curves = attention_digits.main(["--short", "--noise", noise, "--out", path])
  with open(path, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
  tf_c, jax_c = curves["tensorflow"], curves["jax"]
  for key in ("train_loss", "test_loss", "test_accuracy"):
    assert len(tf_c[key]) == len(jax_c[key]) == 2
    # Same weights, batches and masks: JAX is the independent reference for TF.
    np.testing.assert_allclose(tf_c[key], jax_c[key], atol=1e-4)
  assert tf_c["test_accuracy"][-1] > 0.3  # Chance is 0.1.
  assert tf_c["train_loss"][-1] < tf_c["train_loss"][0]


def test_short_run_with_each_frameworks_own_sampler(tmp_path):
  curves = attention_digits.main(
      ["--short", "--noise", "framework", "--out", os.path.join(tmp_path, "c.png")])
  for c in curves.values():
    assert np.all(np.isfinite(c["train_loss"])) and c["test_accuracy"][-1] > 0.3
  # Different masks (Philox against Threefry) give visibly different curves.
  assert curves["tensorflow"]["train_loss"] != curves["jax"]["train_loss"]
