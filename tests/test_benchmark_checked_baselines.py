"""The overhead benchmark's second baseline: hand-written ops making crossgrad's checks."""

import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf
import torch

from crossgrad.benchmarks import handwritten, handwritten_checked, handwritten_torch

FRAMEWORKS = {"tf": (tf.constant, lambda b: b.tensorflow),
              "jax": (jnp.asarray, lambda b: b.jax),
              "torch": (torch.tensor, lambda b: handwritten_torch.BASELINES[b.op])}


def _center_loss(framework, labels):
  rng = np.random.default_rng(0)
  baseline = handwritten.BASELINES["center_loss"]
  x, y, c = baseline.inputs(64, rng)
  convert, fn = FRAMEWORKS[framework]
  checked = handwritten_checked.checked("center_loss", framework, fn(baseline), 3, (0, 2))
  y = y if labels is None else labels(y, c)
  return checked, [convert(a) for a in (x, y, c)], fn(baseline)


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_checked_ops_compute_what_the_hand_written_ones_do(framework):
  checked, args, plain = _center_loss(framework, None)
  np.testing.assert_array_equal(np.asarray(checked(*args)), np.asarray(plain(*args)))


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
@pytest.mark.parametrize("bad, error", [
    (lambda y, c: np.full_like(y, c.shape[0]), "labels must lie in"),  # One past the last.
    (lambda y, c: np.full_like(y, -1), "labels must lie in")])
def test_checked_ops_check_the_labels_eagerly(framework, bad, error):
  checked, args, _ = _center_loss(framework, bad)
  with pytest.raises(ValueError, match=error):
    checked(*args)


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_checked_ops_check_the_input_count_and_dtypes(framework):
  checked, args, _ = _center_loss(framework, None)
  with pytest.raises(TypeError, match="takes 3 inputs, got 2"):
    checked(*args[:2])
  with pytest.raises(TypeError, match="input 0 must be floating"):
    checked(args[1], args[1], args[2])


def test_checked_torch_sign_is_nan_at_nan():
  fn = handwritten_torch.BASELINES["ste_sign"]
  checked = handwritten_checked.checked("ste_sign", "torch", fn, 1, (0,))
  x = torch.tensor([np.nan, -2.0, 0.0, 3.0])
  assert torch.isnan(fn(x)[0]).item() is False  # torch's own sign: 0 at NaN.
  np.testing.assert_array_equal(checked(x).numpy(), [np.nan, -1.0, 0.0, 1.0])
