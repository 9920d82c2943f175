"""The kernels example: its Pallas and Triton kernels green in every mode they run."""

import json
import os
import subprocess
import sys


def test_example_checks_its_kernels_green():
  done = subprocess.run([sys.executable, "-m", "crossgrad.examples.kernels"],
                        capture_output=True, text=True, timeout=600, check=False,
                        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  table = done.stdout
  for where in ("jax[pallas]", "torch[triton]"):
    assert f"{where} " in table
  assert " FAIL " not in table and "0 failing" in table


def test_kernel_benchmark_times_both_kernels(tmp_path):
  path = tmp_path / "kernels.json"
  done = subprocess.run([sys.executable, "-m", "crossgrad.benchmarks.kernels", "--quick",
                         "--elements=64", f"--json={path}"], capture_output=True, text=True,
                        timeout=600, check=False,
                        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
  assert done.returncode == 0, done.stderr[-3000:]
  result = json.loads(path.read_text())
  assert {(r["backend"], r["kernel"]) for r in result["rows"]} == {("jax", "pallas"),
                                                                     ("torch", "triton")}
  assert all(r["ratio"] > 0 and r["elements"] == 64 for r in result["rows"])
  assert result["interpreted"] == ("interpreters" in result["title"])
  assert "processor" in result["environment"]
