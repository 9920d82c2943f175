"""The sparse-stroke digits CNN in its short mode: TF and JAX train identically."""

import numpy as np

from crossgrad.examples import sparse_digits


def test_strokes_are_sparse_lines_through_the_pixel_centres():
  image = np.zeros((1, 8, 8))
  image[0, 2, 2:4] = 16  # Two neighbouring pixels: one horizontal stroke.
  out = sparse_digits.strokes(image)[0]
  assert set(zip(*np.nonzero(out))) == {(7, 7), (7, 8), (7, 9), (7, 10)}


def _dense_first_loss():
  """The first batch's loss with dense NumPy convolutions of the stroke images."""
  train, _ = sparse_digits.load(64)
  batch = np.random.default_rng(0).choice(len(train.labels), 4, replace=False)
  w1, b1, w2, b2, w3, b3 = (p.astype(np.float64) for p in sparse_digits.init_params(0))
  losses = []
  for k in batch:
    image = np.zeros((24, 24, 1))
    n = train.n_valid[k]
    image[train.h[k, :n, 0], train.h[k, :n, 1]] = train.m[k, :n]
    for w, b in ((w1, b1), (w2, b2)):
      windows = np.lib.stride_tricks.sliding_window_view(image, (3, 3), axis=(0, 1))
      image = np.maximum(np.einsum("hwcij,ijco->hwo", windows, w) + b, 0)
    quadrants = image.reshape(2, 10, 2, 10, -1).mean(axis=(1, 3))
    scores = quadrants.reshape(-1) @ w3 + b3
    scores -= scores.max()
    losses.append(np.log(np.exp(scores).sum()) - scores[train.labels[k]])
  return np.mean(losses)


def test_short_training_agrees_across_frameworks_and_with_dense():
  results = sparse_digits.run(short=True)
  tf_losses = np.array(results["tensorflow"]["losses"])
  jax_losses = np.array(results["jax"]["losses"])
  assert len(tf_losses) == 3 and np.isfinite(tf_losses).all()
  np.testing.assert_allclose(tf_losses, jax_losses, rtol=1e-4)
  np.testing.assert_allclose(tf_losses[0], _dense_first_loss(), rtol=1e-5)
