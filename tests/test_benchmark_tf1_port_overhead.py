"""Smoke run of benchmarks/tf1_port_overhead.py: each ported variant computes the built-in
op's loss (no timings asserted)."""

import json
import subprocess
import sys

import numpy as np

from crossgrad.benchmarks import tf1_port_overhead as bench


def test_ported_and_builtin_variants_agree():
  runs = bench.variants(size=8)
  for mode in ("tf_eager", "tf_graph", "jax_jit"):
    builtin = runs[f"{mode}/builtin"]()
    expected = builtin[0] if isinstance(builtin, tuple) else builtin
    for label in ("ported", "native"):
      ported = runs[f"{mode}/{label}"]()
      loss = ported[0] if isinstance(ported, tuple) else ported
      np.testing.assert_allclose(np.asarray(loss), np.asarray(expected), rtol=1e-6)


def test_command_line_quick_run_writes_its_json(tmp_path):
  path = tmp_path / "port.json"
  subprocess.run([sys.executable, "-m", "crossgrad.benchmarks.tf1_port_overhead", "--quick",
                  "--size=8", f"--json={path}"], capture_output=True, text=True, check=True,
                 timeout=600)
  report = json.loads(path.read_text())
  assert (report["size"], report["repeats"]) == (8, 5)
  assert [r["mode"] for r in report["rows"]] == ["tf_eager", "tf_graph", "jax_jit"]
  assert all(r["ratio"] > 0 for r in report["rows"])
