"""Smoke runs of the sparse benchmarks at tiny sizes (no timing asserted): each checks that
its variants compute the same results before timing them, and writes its report."""

import json

from crossgrad.benchmarks import sparse_conv, sparse_network, sparse_rulebook


def test_quick_sparse_conv_writes_its_report(tmp_path):
  path = tmp_path / "sparse_conv.json"
  report = sparse_conv.run(quick=True, fractions=(0.05, 0.2), json_path=str(path))
  assert json.loads(path.read_text())["break_even"] == report["break_even"]
  for row in report["loops"]:  # compare_loops raises unless H_out and Q equal the loops'.
    assert row["output_sites"] > 0 and set(row["speedup"]) == {
        f"{n}_{p}" for n in ("numpy", "jax", "tensorflow") for p in ("forward", "backward")}
  assert [r["fraction"] for r in report["dense"]] == [0.05, 0.2]
  for row in report["reuse"]:  # compare_reuse raises unless both frameworks match NumPy.
    assert len(row["vs_floor"]) == 2 * 2 * 4 and min(row["vs_floor"].values()) > 0


def test_quick_rulebook_and_network_benchmarks(tmp_path):
  rows = sparse_rulebook.run(**sparse_rulebook.settings(True),
                             json_path=str(tmp_path / "rulebook.json"))["rows"]
  assert {"sparse/grid", "sparse/sort", "submanifold/grid"} <= set(rows[0]["seconds"])
  result = sparse_network.run(**sparse_network.settings(True),
                              json_path=str(tmp_path / "network.json"))
  assert set(result["speedup"]) == {"jax", "tf"} and result["active"] > 0
  assert json.loads((tmp_path / "network.json").read_text())["network"]["layers"] == 4
