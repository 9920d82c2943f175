"""The seed's two-layer example runs, with the seed's site counts and error levels."""

from crossgrad.examples import sparse_two_layer


def test_sparse_two_layer_example_runs():
  result = sparse_two_layer.run()
  assert result["sites"] == (3, 5, 4)  # Seed 001: M1 is 5 x 4, M2 is 4 x 8.
  assert len(result["errors"]) == 12
  assert max(result["errors"].values()) <= 1e-10, result["errors"]
