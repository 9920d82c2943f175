"""examples/tf1_simple_network.py in a short run: TF1 gradients are the seed's formula,
and the ported op's TF2 and JAX gradients are the TF1 ones."""

import numpy as np

from crossgrad.examples import tf1_simple_network as example


def _seed_formula(c, k):
  """dL/dc, dL/dk of the seed network with its overridden add gradient, by hand."""
  d = example.DATA + c
  e = c + k
  a = d * e
  da = np.exp(a) / np.exp(a).sum() - example.LABELS
  ge = d * da  # Upstream gradient reaching the custom add.
  dd = e * da + e * ge  # From a = d * e, plus the override's gradient for input d.
  return [dd + (e + d) * ge, d * ge]


def test_short_run_shows_identical_gradients():
  rows = example.run(steps=3, seed=1)
  assert len(rows) == 3 and rows[-1]["loss"] < rows[0]["loss"]
  for row in rows:
    for other in ("tf2", "jax"):
      for got, want in zip(row[other], row["tf1"]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
  rng = np.random.default_rng(1)
  c0, k0 = (np.clip(0.1 * rng.standard_normal(2), -0.2, 0.2).astype(np.float32)
            for _ in range(2))
  for got, want in zip(rows[0]["tf1"], _seed_formula(c0, k0)):
    np.testing.assert_allclose(got, want, rtol=1e-5)
