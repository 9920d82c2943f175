"""examples/tf1_square_cube.py in its short mode: seed 001's printed gradients."""

import numpy as np

from crossgrad.examples import tf1_square_cube as example


def test_short_run_reproduces_the_seed_and_passes_the_cross_check():
  legacy, ported, report = example.run(short=True)
  expected = {"square": [2.0, 4.0, 6.0, 8.0], "cube": [3.0, 12.0, 27.0, 48.0]}  # Seed 001.
  for label, want in expected.items():
    np.testing.assert_allclose(legacy[label], want, rtol=1e-6)
    np.testing.assert_allclose(ported[label]["tf2"], want, rtol=1e-6)
    np.testing.assert_allclose(ported[label]["jax"], want, rtol=1e-6)
  assert report.ok, report.table(failures_only=True)
