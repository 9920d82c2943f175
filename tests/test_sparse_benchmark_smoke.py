"""Smoke runs of the sparse benchmarks at tiny sizes (no timing asserted): each checks that
its variants compute the same results before timing them, and returns what it writes."""

import json

import numpy as np

from crossgrad.benchmarks import sparse_conv, sparse_network, sparse_rulebook


def test_quick_sparse_conv_writes_its_tables(tmp_path):
  path = tmp_path / "sparse_conv.json"
  report = sparse_conv.run(quick=True, fractions=(0.05, 0.2), json_path=str(path))
  written = json.loads(path.read_text())
  assert set(written) == set(report) | {"environment"}
  assert written["break_even"] == report["break_even"]
  # compare_loops raises unless H_out and Q equal the loops'; compare_reuse unless both
  # frameworks' layers equal NumPy's.
  assert [r["variant"] for r in report["loops"][:5]] == [
      "loops", "numpy", "jax", "tensorflow", "floor"]
  assert [r["active"] for r in report["dense"]] == ["5%", "5%", "20%", "20%"]
  assert len(report["rows"]) == 2 * 2 * 2 * 5  # fractions x kinds x frameworks x parts
  assert all(r["floor ms"] > 0 and np.isfinite(r["x floor"]) for r in report["rows"])


def test_quick_rulebook_and_network_benchmarks(tmp_path):
  rows = sparse_rulebook.run(**sparse_rulebook.settings(True),
                             json_path=str(tmp_path / "rulebook.json"))["rows"]
  assert len(rows) == 2 and all(r["unique / grid"] > 0 for r in rows)
  result = sparse_network.run(**sparse_network.settings(True),
                              json_path=str(tmp_path / "network.json"))
  assert [r["framework"][:3] for r in result["rows"]] == ["JAX", "TF "]
  assert json.loads((tmp_path / "network.json").read_text())["parts"] == result["parts"]
