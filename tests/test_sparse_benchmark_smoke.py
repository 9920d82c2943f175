"""Smoke run of the sparse-convolution benchmark at tiny sizes (no timing asserted)."""

import json

from crossgrad.benchmarks import sparse_conv


def test_quick_benchmark_writes_its_report(tmp_path):
  path = tmp_path / "sparse_conv.json"
  report = sparse_conv.main(["--quick", "--fractions", "0.05", "0.2", "--json", str(path)])
  assert json.loads(path.read_text())["break_even"] == report["break_even"]
  for row in report["loops"]:  # compare_loops raises unless H_out and Q equal the loops'.
    assert row["output_sites"] > 0 and set(row["speedup"]) == {
        f"{n}_{p}" for n in ("numpy", "jax", "tensorflow") for p in ("forward", "backward")}
  assert [r["fraction"] for r in report["dense"]] == [0.05, 0.2]
