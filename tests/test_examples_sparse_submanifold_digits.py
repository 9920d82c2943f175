"""The submanifold stroke-digits CNN in its short mode: TF and JAX train identically, and
the first loss is the dense computation of the same sparse network (NumPy, masks)."""

import numpy as np

from crossgrad.examples import sparse_submanifold_digits as example


def _same(x, w):
  c = (w.shape[0] - 1) // 2
  padded = np.pad(x, ((c, c), (c, c), (0, 0)))
  windows = np.lib.stride_tricks.sliding_window_view(padded, w.shape[:2], axis=(0, 1))
  return np.einsum("hwcij,ijco->hwo", windows, w)


def _dense_first_loss():
  """Initial biases are zero, so every ground state is 0: each submanifold layer is a dense
  SAME convolution kept at the active sites, the downsampling a dense stride-2 one."""
  train, _ = example.load(64)
  batch = np.random.default_rng(0).choice(len(train.labels), 4, replace=False)
  w1, _, w2, _, w3, _, w4, _, w5, b5 = (p.astype(np.float64)
                                        for p in example.init_params(0))
  losses = []
  for image, label in zip(example.images_of(train, batch).astype(np.float64),
                          train.labels[batch]):
    active = np.any(image != 0, axis=-1, keepdims=True)
    x = np.maximum(_same(image, w1), 0) * active
    x = np.maximum(_same(x, w2), 0) * active
    blocks = np.lib.stride_tricks.sliding_window_view(x, (2, 2), axis=(0, 1))[::2, ::2]
    x = np.maximum(np.einsum("hwcij,ijco->hwo", blocks, w3), 0)
    down = active.reshape(12, 2, 12, 2, 1).any(axis=(1, 3))
    x = np.maximum(_same(x, w4), 0) * down
    scores = x.reshape(2, 6, 2, 6, -1).mean(axis=(1, 3)).reshape(-1) @ w5 + b5
    scores -= scores.max()
    losses.append(np.log(np.exp(scores).sum()) - scores[label])
  return np.mean(losses)


def test_short_training_agrees_across_frameworks_and_with_dense():
  results = example.run(steps=3, batch=4, limit=64, dense_steps=2)
  tf_losses = np.array(results["tensorflow"]["losses"])
  jax_losses = np.array(results["jax"]["losses"])
  assert len(tf_losses) == 3 and np.isfinite(tf_losses).all()
  np.testing.assert_allclose(tf_losses, jax_losses, rtol=1e-4)
  np.testing.assert_allclose(tf_losses[0], _dense_first_loss(), rtol=1e-5)
  for name in ("tensorflow", "jax"):
    assert results[name]["step_seconds"] > 0 and results[name]["dense_step_seconds"] > 0
