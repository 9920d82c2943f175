"""crossgrad.port_check: the ported op in TF2 and JAX against the tf.compat.v1 graph."""

import importlib.util
import pathlib
import subprocess
import sys

import numpy as np

from crossgrad import port_check

TESTDATA = pathlib.Path(__file__).parent / "testdata"


def _run(*args):
  return subprocess.run([sys.executable, "-m", "crossgrad.port_check", *args],
                        capture_output=True, text=True, check=False, timeout=120)


def _load(name):
  spec = importlib.util.spec_from_file_location(f"crossgrad_pc_{name}", TESTDATA / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_compare_covers_every_run_and_agrees_with_the_graph():
  add = _load("legacy_add")
  rng = np.random.default_rng(0)
  inputs = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(3)]
  cotangent = rng.standard_normal((3, 2)).astype(np.float32)
  rows = port_check.compare(add.forward_func, add.backprop_func, inputs, [cotangent])
  assert {(r["backend"], r["mode"]) for r in rows} == set(port_check.RUNS)
  assert all(r["ok"] for r in rows), port_check.table(rows)


def test_planted_divergence_is_reported():
  diverging = _load("legacy_diverging")
  x = np.linspace(1.0, 2.0, 6).astype(np.float64)
  rows = port_check.compare(diverging.forward, diverging.grad_graph_only, [x], [np.ones_like(x)])
  grads = [r for r in rows if r["check"] == "grad"]
  # The graph gives 2x, every port 2.5x: relative error 0.5 / 2.5 everywhere.
  assert all(abs(r["error"] - 0.2) < 1e-12 and not r["ok"] for r in grads)
  assert all(r["ok"] for r in rows if r["check"] == "forward")


def test_command_line_passes_on_the_seed_add():
  result = _run(f"--module={TESTDATA / 'legacy_add.py'}", "--forward=forward_func",
                "--grad=backprop_func", "--shapes=2,3:2,3:2,3")
  assert result.returncode == 0, result.stdout + result.stderr
  assert "8 comparisons with the tf.compat.v1 graph, 0 failing" in result.stdout


def test_command_line_exits_non_zero_on_a_mismatch():
  result = _run(f"--module={TESTDATA / 'legacy_diverging.py'}", "--forward=forward",
                "--grad=grad_graph_only", "--dtype=float64")
  assert result.returncode == 1, result.stdout + result.stderr
  assert "4 failing" in result.stdout and "FAIL" in result.stdout


def test_command_line_names_a_grad_with_the_wrong_count():
  result = _run(f"--module={TESTDATA / 'legacy_add.py'}", "--forward=forward_func",
                "--grad=wrong_count_grad")
  assert result.returncode == 2
  assert "wrong_count_grad" in result.stderr and "expected 3" in result.stderr


def test_command_line_modules_define_their_flags_only_when_run():
  """Importing them next to crossgrad.check (its own --json, --module, --seed) is fine."""
  import importlib  # pylint: disable=g-import-not-at-top
  for name in ("crossgrad.check", "crossgrad.scan", "crossgrad.port_check",
               "crossgrad.benchmarks.tf1_port_overhead",
               "crossgrad.benchmarks.array_api_conformance",
               "crossgrad.examples.tf1_simple_network", "crossgrad.examples.tf1_square_cube"):
    importlib.import_module(name)
