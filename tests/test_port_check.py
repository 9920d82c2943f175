"""crossgrad.tf1.port_check: the ported op in TF2 and JAX against the tf.compat.v1 graph, on
legacy modules as projects write them (tests/testdata/legacy_*.py)."""

import subprocess
import sys

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.tf1 import port_check

import legacy_programs


def _run(*args):
  return subprocess.run([sys.executable, "-m", "crossgrad.tf1.port_check", *args],
                        capture_output=True, text=True, check=False, timeout=180)


CASES = legacy_programs.load("legacy_port_check")


def test_compare_covers_every_run_and_agrees_with_the_graph():
  add = legacy_programs.load("legacy_add")
  rng = np.random.default_rng(0)
  inputs = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(3)]
  cotangent = rng.standard_normal((3, 2)).astype(np.float32)
  rows = port_check.compare(add.forward_func, add.backprop_func, inputs, [cotangent])
  assert {(r["backend"], r["mode"]) for r in rows} == set(port_check.RUNS)
  assert all(r["ok"] for r in rows), port_check.table(rows)


def test_planted_divergence_is_reported():
  diverging = legacy_programs.load("legacy_diverging")
  x = np.linspace(1.0, 2.0, 6).astype(np.float64)
  rows = port_check.compare(diverging.forward, diverging.grad_graph_only, [x], [np.ones_like(x)])
  grads = [r for r in rows if r["check"] == "grad"]
  # The graph gives 2x, every port 2.5x: relative error 0.5 / 2.5 everywhere.
  assert all(abs(r["error"] - 0.2) < 1e-12 and not r["ok"] for r in grads)
  assert all(r["ok"] for r in rows if r["check"] == "forward")


def test_inputs_are_parameters_without_defaults():
  from crossgrad import tf1  # pylint: disable=g-import-not-at-top
  assert tf1.forward_input_names("round", np.round) == ("a",)  # (a, decimals=0, out=None)
  assert tf1.forward_input_names("f", lambda x, y, scale=2.0: x) == ("x", "y")
  assert tf1.forward_input_names("f", lambda *args: args[0], ["a", "b"]) == ("a", "b")
  x = np.linspace(-2.0, 2.0, 12).reshape(3, 4).astype(np.float32)
  rows = port_check.compare(CASES.round_forward, CASES.identity_grad, [x], [np.ones_like(x)],
                            input_names=["a"])
  assert all(r["ok"] for r in rows), port_check.table(rows)


def test_nested_functions_resolve_unless_they_close_over_variables():
  forward = port_check.resolve(CASES, "build_log_layer.log_forward", "forward")
  grad = port_check.resolve(CASES, "build_log_layer.log_grad", "grad")
  np.testing.assert_allclose(forward(np.array([1.0, np.e])), [0.0, 1.0])
  x = np.linspace(0.5, 2.0, 6)
  inputs = [x.reshape(2, 3)]
  rows = port_check.compare(forward, grad, inputs, [np.ones((2, 3))])
  assert all(r["ok"] for r in rows), port_check.table(rows)
  assert port_check.resolve(CASES, "np.round", "forward") is np.round
  with pytest.raises(cg.CrossgradError, match=r"--grad.*variables of the function.*scale"):
    port_check.resolve(CASES, "build_scaled_layer.scaled_grad", "grad")
  with pytest.raises(cg.CrossgradError, match=r"--grad.*no 'nope'"):
    port_check.resolve(CASES, "build_log_layer.nope", "grad")


def test_inputs_from_dtypes_ranges_and_a_sample():
  rng = np.random.default_rng(0)
  params, ids = port_check.make_inputs(2, rng, shapes="5,3:4", dtype="float32",
                                       dtypes=["float64", "int32"], ranges="-1,1:0,5",
                                       sample=None)
  assert params.dtype == np.float64 and params.shape == (5, 3) and np.abs(params).max() <= 1
  assert ids.dtype == np.int32 and ids.shape == (4,) and set(ids) <= set(range(5))
  (x,) = port_check.make_inputs(1, rng, shapes=None, dtype="float32", dtypes=None,
                                ranges=None, sample=CASES.positive_sample)
  assert x.dtype == np.float32 and x.shape == (3, 4) and x.min() >= 0.5
  with pytest.raises(cg.CrossgradError, match="--ranges"):
    port_check.make_inputs(2, rng, shapes=None, dtype="float32", dtypes=None, ranges="0,1",
                           sample=None)


def test_integer_inputs_get_no_gradient():
  lookup = legacy_programs.load("legacy_int_inputs")
  rng = np.random.default_rng(1)
  params = rng.standard_normal((5, 3)).astype(np.float32)
  ids = np.array([1, 4, 4, 0], np.int32)
  rows = port_check.compare(lookup.lookup, lookup.lookup_grad, [params, ids],
                            [rng.standard_normal((4, 3)).astype(np.float32)],
                            output_shapes=[(4, 3)], input_names=["params", "ids"])
  assert all(r["ok"] for r in rows), port_check.table(rows)
  assert {r["worst"] for r in rows if r["check"] == "grad"} == {"params"}


def test_stochastic_code_under_a_seed_or_a_tolerance():
  x = np.linspace(-2.0, 2.0, 12).reshape(3, 4).astype(np.float32)
  g = np.ones_like(x)
  # NumPy-random forward: the same draws in every run once the global RNG is reset.
  rows = port_check.compare(CASES.stochastic_round, CASES.identity_grad, [x], [g], seed=3)
  assert all(r["ok"] for r in rows), port_check.table(rows)
  with pytest.raises(port_check.ForwardDiffers, match="not reproducible"):
    port_check.compare(CASES.stochastic_round, CASES.identity_grad, [x], [g], seed=None)
  # TF-random gradient: graph and eager draw differently; within 10% of each other.
  rows = port_check.compare(np.round, CASES.noisy_identity_grad, [x], [g], seed=3)
  assert not all(r["ok"] for r in rows if r["check"] == "grad")
  rows = port_check.compare(np.round, CASES.noisy_identity_grad, [x], [g], seed=3,
                            tolerance=0.25)
  assert all(r["ok"] for r in rows), port_check.table(rows)


def test_command_line_passes_on_the_seed_add_without_deprecation_notices():
  result = _run(f"--module={legacy_programs.TESTDATA / 'legacy_add.py'}", "--forward=forward_func",
                "--grad=backprop_func", "--shapes=2,3:2,3:2,3")
  assert result.returncode == 0, result.stdout + result.stderr
  assert "8 comparisons with the tf.compat.v1 graph, 0 failing" in result.stdout
  assert "deprecat" not in result.stderr.lower(), result.stderr


def test_command_line_takes_int_inputs():
  result = _run(f"--module={legacy_programs.TESTDATA / 'legacy_int_inputs.py'}", "--forward=lookup",
                "--grad=lookup_grad", "--shapes=5,3:4", "--dtypes=float32,int32",
                "--ranges=-1,1:0,5", "--output_shapes=4,3")
  assert result.returncode == 0, result.stdout + result.stderr
  assert "inputs ['float32[5, 3]', 'int32[4]']" in result.stdout


def test_command_line_exits_1_on_a_gradient_mismatch_only():
  result = _run(f"--module={legacy_programs.TESTDATA / 'legacy_diverging.py'}", "--forward=forward",
                "--grad=grad_graph_only", "--dtype=float64")
  assert result.returncode == 1, result.stdout + result.stderr
  assert "4 failing" in result.stdout and "FAIL" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--forward=forward_func", "--grad=wrong_count_grad"], "expected 3"),
    (["--forward=forward_func"], "--grad"),  # A required flag is missing.
    (["--forward=forward_func", "--grad=backprop_func", "--num_outputs=x"], "num_outputs"),
])
def test_command_line_exits_2_on_argument_problems(args, message):
  result = _run(f"--module={legacy_programs.TESTDATA / 'legacy_add.py'}", *args)
  assert result.returncode == 2, result.stdout + result.stderr
  assert message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_command_line_exits_2_on_module_problems(tmp_path):
  broken = tmp_path / "broken.py"
  broken.write_text("import numpy as np\nraise RuntimeError('needs a GPU')\n")
  for module, message in ((broken, "RuntimeError: needs a GPU"),
                          (tmp_path / "missing.py", "no such file")):
    result = _run(f"--module={module}", "--forward=f", "--grad=g")
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_command_line_modules_define_their_flags_only_when_run():
  """Importing them next to crossgrad.check (its own --json, --module, --seed) is fine.

  The examples register their ops when imported: the ops and the modules this test newly
  imported are removed again, so a later test in the process imports and registers afresh."""
  import importlib  # pylint: disable=g-import-not-at-top
  ops, modules = set(cg.names()), set(sys.modules)
  try:
    for name in ("crossgrad.check", "crossgrad.tf1.scan", "crossgrad.tf1.port_check",
                 "crossgrad.benchmarks.tf1_port_overhead",
                 "crossgrad.benchmarks.array_api_conformance",
                 "crossgrad.examples.tf1_simple_network", "crossgrad.examples.tf1_square_cube"):
      importlib.import_module(name)
  finally:
    for name in set(cg.names()) - ops:
      cg.unregister(name)
    for name in set(sys.modules) - modules:
      if name.startswith("crossgrad.examples."):
        del sys.modules[name]
