"""Every benchmark runs in its quick mode and writes well-formed JSON (no timing asserts)."""

import ast
import importlib
import inspect
import json
import math
import pathlib

from absl import flags
import numpy as np
import pytest

import crossgrad as cg
from crossgrad.benchmarks import (check_cost, handwritten, handwritten_torch, hlo,
                                  import_cost, overhead, run_all, timing)

HLO_TEXT = """HloModule m, is_scheduled=true

%fused_computation (p0: f32[8], p1: f32[8]) -> f32[8] {
  %p0 = f32[8]{0} parameter(0)
  %p1 = f32[8]{0} parameter(1)
  %c = f32[] constant(0.2)
  %b = f32[8]{0} broadcast(%c), dimensions={}
  ROOT %m = f32[8]{0} multiply(%p0, %b)
}

ENTRY %main (x: f32[8], w: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %w = f32[8]{0} parameter(1)
  %f = f32[8]{0} fusion(%x, %w), kind=kLoop, calls=%fused_computation
  ROOT %t = (f32[8]{0}, f32[8]{0}) tuple(%f, %x)
}
"""

NO_BASELINE_OP = cg.OpDef("t_no_baseline", lambda xp, x: (x * 2.0, ()),
                          lambda xp, r, g: (2.0 * g,),
                          sample=lambda rng: (rng.standard_normal(3),))


def test_hlo_summary_counts_and_signature():
  summary = hlo.summary(HLO_TEXT)
  assert (summary["instructions"], summary["fusions"], summary["computations"]) == (9, 1, 2)
  renamed = HLO_TEXT.replace("%p0", "%q0").replace("multiply(%q0, %b)", "multiply(%b, %q0)")
  assert hlo.summary(renamed)["signature"] == summary["signature"]
  changed = HLO_TEXT.replace("constant(0.2)", "constant(0.3)")
  assert hlo.summary(changed)["signature"] != summary["signature"]


def _positive(value):
  return isinstance(value, float) and np.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
  """``(results, out_dir)`` of one ``run_all --quick`` (every benchmark), shared by the
  tests of what it writes."""
  out_dir = tmp_path_factory.mktemp("run_all_quick")
  cg.register(NO_BASELINE_OP)
  try:
    return run_all.run(quick=True, out_dir=str(out_dir)), out_dir
  finally:
    cg.unregister("t_no_baseline")


def test_run_all_quick_writes_every_table(quick_run):
  results, out_dir = quick_run
  assert set(results) == set(run_all.BENCHMARKS) | {"summary"}
  for name in results:
    payload = json.loads((out_dir / f"{name}.json").read_text())
    assert payload["environment"]["tensorflow"] and payload["environment"]["jax"]
    assert set(payload) == set(results[name]) | {"environment"}

  overhead_json = json.loads((out_dir / "overhead.json").read_text())
  timed = {(r["op"], r["mode"]) for r in overhead_json["rows"]}
  assert timed == {(op, mode) for op in handwritten.BASELINES for mode in overhead.QUICK_MODES
                   if op in handwritten_torch.BASELINES or not mode.startswith("torch")}
  for row in overhead_json["rows"]:
    assert all(_positive(row[k]) for k in ("crossgrad ms", "hand-written ms", "ratio",
                                           "ratio q1", "ratio q3", "checked ms",
                                           "checked ratio"))
    assert math.isclose(row["extra us"], (row["crossgrad ms"] - row["checked ms"]) * 1e3,
                        abs_tol=1e-6)
    assert row["ratio q1"] <= row["ratio q3"]
  over = [r for r in overhead_json["rows"]  # The targets: 1.05 under XLA, else 1.10.
          if r["ratio"] > (1.05 if r["mode"] in ("jax.jit", "tf.function(jit_compile=True)")
                           else 1.10)]
  assert overhead_json["summary"]["rows_over_target"] == (
      f"{len(over)} of {len(overhead_json['rows'])}")
  assert sum(overhead_json["summary"]["rows_over_target_by_mode"].values()) == len(over)
  assert {r["op"] for r in overhead_json["structure"]} == set(handwritten.BASELINES)
  assert {r["op"] for r in overhead_json["custom_vjp"]} == set(handwritten.BASELINES)
  assert all(r["same HLO"] == "yes" for r in overhead_json["custom_vjp"])  # Same program.
  assert all(_positive(r["ratio"]) for r in overhead_json["custom_vjp"])
  assert all(r["instructions cg"] > 0 for r in overhead_json["structure"])
  assert {"op": "t_no_baseline", "note": "no hand-written baseline"} in overhead_json["no_baseline"]

  tf1 = json.loads((out_dir / "tf1_idiom.json").read_text())
  assert tf1["rows"] and all(_positive(r["speedup"]) for r in tf1["rows"])

  cost = json.loads((out_dir / "check_cost.json").read_text())
  assert cost["cross_check_ok"]
  assert all(_positive(r["seconds"]) and _positive(r["ratio"]) for r in cost["rows"])
  assert [r["elements"] for r in cost["scaling"]] == [1000]
  assert any(r["measured"] == "yes" for r in cost["compute_gradient"])

  dispatch = json.loads((out_dir / "dispatch.json").read_text())
  assert {r["op"] for r in dispatch["rows"]} == set(handwritten.BASELINES)
  assert all(_positive(r["ratio"]) for r in dispatch["rows"])
  assert {"op": "t_no_baseline", "note": "no hand-written baseline"} in dispatch["no_baseline"]

  mask = json.loads((out_dir / "bernoulli_mask.json").read_text())
  assert {(f, n) for f, rows in mask["frameworks"].items() for n in rows} == {
      ("tensorflow", "given_u"), ("tensorflow", "sampled"), ("tensorflow", "threefry"),
      ("jax", "given_u"), ("jax", "sampled")}
  assert all(_positive(r["ratio"]) for rows in mask["frameworks"].values()
             for r in rows.values())

  port = json.loads((out_dir / "tf1_port_overhead.json").read_text())
  assert [r["mode"] for r in port["rows"]] == ["tf_eager", "tf_graph", "jax_jit"]
  assert all(_positive(r["ratio"]) for r in port["rows"])

  summary = json.loads((out_dir / "summary.json").read_text())
  assert summary["quick"] and _positive(summary["headlines"]["overhead_max_ratio_xla"])
  assert summary["date"].startswith("20") and isinstance(summary["accelerators"], list)
  assert list(summary["seconds"]) == list(run_all.BENCHMARKS)  # docs_tables' section order.


def test_quick_sparse_conv_writes_its_tables(quick_run):
  results, out_dir = quick_run
  report = results["sparse_conv"]
  written = json.loads((out_dir / "sparse_conv.json").read_text())
  assert set(written) == set(report) | {"environment"}
  assert written["break_even"] == report["break_even"]
  # compare_loops raises unless H_out and Q equal the loops'; compare_reuse unless both
  # frameworks' layers equal NumPy's.
  assert [r["variant"] for r in report["loops"][:5]] == [
      "loops", "numpy", "jax", "tensorflow", "floor"]
  assert [r["active"] for r in report["dense"]] == ["5%", "5%", "20%", "20%"]
  assert len(report["rows"]) == 1 * 2 * 2 * 5  # fractions x kinds x frameworks x parts
  assert all(r["floor ms"] > 0 and np.isfinite(r["x floor"]) for r in report["rows"])


def test_quick_rulebook_and_network_benchmarks(quick_run):
  results, out_dir = quick_run
  rows = results["sparse_rulebook"]["rows"]
  assert len(rows) == 2 and all(r["unique / grid"] > 0 for r in rows)
  result = results["sparse_network"]
  assert [r["framework"][:3] for r in result["rows"]] == ["JAX", "TF "]
  assert json.loads((out_dir / "sparse_network.json").read_text())["parts"] == result["parts"]


def test_quick_import_cost_times_both_imports(quick_run):
  results, out_dir = quick_run
  written = json.loads((out_dir / "import_cost.json").read_text())
  ours, numpy_row = written["rows"]
  assert (ours["import"], numpy_row["import"]) == ("import crossgrad", "import numpy")
  for row in written["rows"]:
    assert _positive(row["median ms"]) and row["lowest ms"] <= row["highest ms"]
  assert math.isclose(written["ratio"], ours["median ms"] / numpy_row["median ms"])
  assert written["ratio_q1"] <= written["ratio_q3"]
  assert ours["heavy loaded"] == [] and ours["modules added"] > numpy_row["modules added"]
  assert results["summary"]["headlines"]["import_cost_ratio"] == written["ratio"]


def test_import_cost_names_a_heavy_module_it_brings(tmp_path):
  _, added, heavy = import_cost.fresh_import("crossgrad.checker.engine", str(tmp_path))
  assert heavy == ["crossgrad.checker.engine"] and added > 1


def test_quick_bernoulli_mask_writes_every_ratio(quick_run):
  _, out_dir = quick_run
  results = json.loads((out_dir / "bernoulli_mask.json").read_text())
  for framework in ("tensorflow", "jax"):
    for noise in ("given_u", "sampled"):
      row = results["frameworks"][framework][noise]
      assert len(row["op_ms_all"]) == len(row["handwritten_ms_all"]) == results["repeats"]
  assert results["environment"]["tensorflow"] and results["environment"]["jax"]


def test_hand_written_baselines_compute_what_the_ops_compute():
  """The overhead ratios compare equal work: same outputs and gradients, in every framework."""
  rng = np.random.default_rng(0)
  assert set(handwritten_torch.BASELINES) <= set(handwritten.BASELINES)
  for name, baseline in handwritten.BASELINES.items():
    inputs = baseline.inputs(256, rng)
    _assert_baselines_match(name, inputs, rng)


def test_hand_written_masks_are_the_ops_exact_selects():
  """Where the ops select (a dropped element, a padding row of dQ), so do their baselines:
  an inf or NaN there gives an exact 0, as the op's, not the NaN of a multiply by a mask."""
  rng = np.random.default_rng(1)
  p, features, u = handwritten.BASELINES["bernoulli_mask"].inputs(256, rng)
  dropped = np.flatnonzero(u[:, 0] >= p[:, 0])[:2]
  features[dropped, 0] = [np.inf, np.nan]
  g = rng.standard_normal(features.shape).astype(np.float32)
  g[dropped, 1] = [np.nan, -np.inf]
  _assert_baselines_match("bernoulli_mask", (p, features, u), rng, g)
  m, ground, h_out, dst = handwritten.BASELINES["sparse_q"].inputs(256, rng)
  g = rng.standard_normal((h_out.shape[0], dst.shape[1] * m.shape[1])).astype(np.float32)
  padding = np.flatnonzero(h_out[:, 0] < 0)[:2]
  g[padding, :2] = [np.inf, np.nan]
  _assert_baselines_match("sparse_q", (m, ground, h_out, dst), rng, g)


def _assert_baselines_match(name, inputs, rng, g=None):
  """Output and gradients (for cotangent ``g``, else a random one) of each hand-written
  version of op ``name`` equal the NumPy op's, NaN where it is NaN."""
  import jax  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  baseline = handwritten.BASELINES[name]
  op = overhead.op_of(baseline)
  out = np.asarray(cg.numpy.get(op, **baseline.params)(*inputs))
  if g is None:
    g = rng.standard_normal(out.shape).astype(out.dtype)
  _, vjp_fn = cg.numpy.vjp(op, *inputs, **baseline.params)
  expected = [vjp_fn(g)[i] for i in op.diff_argnums]

  out_jax, jax_vjp = jax.vjp(lambda *d: baseline.jax(*_merge(op, inputs, d)),
                             *[inputs[i] for i in op.diff_argnums])
  tensors = [tf.constant(x) for x in inputs]
  with tf.GradientTape() as tape:
    for i in op.diff_argnums:
      tape.watch(tensors[i])
    out_tf = baseline.tensorflow(*tensors)
  grads_tf = tape.gradient(out_tf, [tensors[i] for i in op.diff_argnums], output_gradients=g)
  found = [(out_jax, jax_vjp(g)), (out_tf, grads_tf)]
  if name in handwritten_torch.BASELINES:
    args = [torch.tensor(x, requires_grad=i in op.diff_argnums) for i, x in enumerate(inputs)]
    out_torch = handwritten_torch.BASELINES[name](*args)
    diff_args = [args[i] for i in op.diff_argnums]
    found.append((out_torch.detach(),
                  torch.autograd.grad(out_torch, diff_args, torch.tensor(g))))
  for got_out, got_grads in found:
    np.testing.assert_allclose(np.asarray(got_out), out, rtol=1e-5, atol=1e-5, err_msg=name)
    for got, want in zip(got_grads, expected):
      np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4, err_msg=name)


def _merge(op, inputs, diff_inputs):
  args = list(inputs)
  for i, x in zip(op.diff_argnums, diff_inputs):
    args[i] = x
  return args


def _is_program(path):
  """Whether the module runs as a program: it has an ``if __name__ == "__main__":``."""
  return any(isinstance(n, ast.If) and isinstance(n.test, ast.Compare)
             and getattr(n.test.left, "id", None) == "__name__"
             for n in ast.parse(path.read_text()).body)


def test_run_all_of_some_benchmarks_keeps_the_others_headlines(tmp_path):
  """``--only`` reruns some benchmarks; the summary's headlines still cover the JSON that
  earlier runs left beside them (docs/benchmarks.md's headline table stays whole)."""
  kept = {"rows": [{"elements": 1000, "TF1 idiom": "py_func", "crossgrad": "XLA",
                    "speedup": 2.5}]}
  (tmp_path / "tf1_idiom.json").write_text(json.dumps(kept))
  run_all.run(quick=True, out_dir=str(tmp_path), benchmarks=("tf1_port_overhead",))
  summary = json.loads((tmp_path / "summary.json").read_text())
  assert list(summary["seconds"]) == ["tf1_port_overhead"]
  assert summary["headlines"]["tf1_idiom_speedup"] == {"1000 py_func vs XLA": 2.5}
  assert all(_positive(r) for r in summary["headlines"]["tf1_port_overhead_ratio"].values())


def test_run_all_lists_every_benchmark_module():
  """run_all's lists split benchmarks/ exactly: the programs it runs (and the pending
  ones) have a main guard and run()/settings(); tools have a main guard; libraries have
  neither."""
  folder = pathlib.Path(run_all.__file__).parent
  present = {p.stem: p for p in folder.glob("*.py") if p.stem not in ("__init__", "run_all")}
  listed = run_all.BENCHMARKS + run_all.PENDING + run_all.TOOLS + run_all.LIBRARIES
  assert sorted(listed) == sorted(present)  # Each module once, none missing.
  assert run_all.BENCHMARKS[0] == "check_cost"
  for name in run_all.BENCHMARKS + run_all.PENDING + run_all.TOOLS:
    assert _is_program(present[name]), f"{name} is listed as a benchmark but is no program"
  for name in run_all.LIBRARIES:
    assert not _is_program(present[name]), f"{name} runs as a program: list it as a benchmark"
  for name in run_all.BENCHMARKS:
    module = importlib.import_module(f"crossgrad.benchmarks.{name}")
    assert callable(module.run) and set(module.settings(True)) <= set(
        inspect.signature(module.run).parameters), name


def test_sizes_flag_reads_comma_separated_integers():
  values = flags.FlagValues()
  timing.define_ints("sizes", "Element counts.", values)
  values(["prog", "--sizes=1e3,1000000"])
  assert values.sizes == [1000, 1000000]
  values.unparse_flags()
  values(["prog"])
  assert values.sizes is None


def test_check_cost_keeps_each_backends_median_run(monkeypatch):
  """Runs come in rounds over the backends; a backend's row is its median-ratio run, with
  the lowest and highest ratio, and FAIL if any run failed."""
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  runs = {"jax": [(1.0, 2.5, "ok"), (1.0, 1.5, "ok"), (1.0, 3.0, "ok")],
          "torch": [(2.0, 2.0, "ok"), (2.0, 3.0, "FAIL"), (2.0, 2.2, "ok")]}
  order = []

  def fake_run(backend, sizes, threads):
    del threads
    order.append(backend)
    small, ratio, status = runs[backend][sum(b == backend for b in order) - 1]
    return (backend, 7, status, small, small * ratio, ratio)

  monkeypatch.setattr(base, "default_backends", lambda: ["jax", "torch"])
  monkeypatch.setattr(check_cost, "_fresh_backend_scaling_row", fake_run)
  assert check_cost.backend_scaling_rows((1, 2), runs=3) == [
      ("jax", 7, "ok", 3, 1.5, 3.0, 1.0, 2.5, 2.5),
      ("torch", 7, "FAIL", 3, 2.0, 3.0, 2.0, 4.4, 2.2)]
  assert order == ["jax", "torch"] * 3


def test_check_cost_sets_its_figures_against_their_targets():
  cache = [{"jobs": 1, "status": "ok", "cold s": 80.0, "warm s": 24.0, "warm / cold": 0.3},
           {"jobs": 2, "status": "ok", "cold s": 50.0, "warm s": 25.0, "warm / cold": 0.5}]
  by_backend = [("jax", 20, "ok", 2.0, 5.0, 2.5), ("torch", 50, "ok", 3.0, 5.25, 1.75)]
  assert check_cost.targets(cache, by_backend) == [
      {"figure": "cold full check s", "value": 80.0, "target": 60.0, "met": False},
      {"figure": "warm / cold", "value": 0.3, "target": 0.4, "met": True},
      {"figure": "cold full check s, --jobs=2", "value": 50.0, "target": 60.0, "met": True},
      {"figure": "warm / cold, --jobs=2", "value": 0.5, "target": 0.4, "met": False},
      {"figure": "leaky_relu check, 1M / 1K elements, jax alone", "value": 2.5,
       "target": 2.0, "met": False},
      {"figure": "leaky_relu check, 1M / 1K elements, torch alone", "value": 1.75,
       "target": 2.0, "met": True}]
  assert check_cost.targets([]) == []  # Quick runs: nothing to set.
