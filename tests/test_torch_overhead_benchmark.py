"""benchmarks/torch_overhead.py in quick mode: rows, ratios and the compiled-graph check."""

import json

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (crossgrad[torch])")

from crossgrad.benchmarks import torch_overhead  # pylint: disable=wrong-import-position


def test_quick_run_writes_rows_and_finds_the_same_compiled_graphs(tmp_path):
  path = tmp_path / "torch_overhead.json"
  payload = torch_overhead.run(sizes=(1000,), ops=["leaky_relu"], budget_s=0.05,
                               min_repeats=3, json_path=str(path), threads=1)
  assert {(r["op"], r["mode"]) for r in payload["rows"]} == {
      ("leaky_relu", "eager"), ("leaky_relu", "torch.compile")}
  assert all(r["ratio"] > 0 for r in payload["rows"])
  assert payload["summary"]["same_compiled_graphs"]
  assert json.loads(path.read_text())["environment"]["cpus"]


def test_the_graph_check_sees_a_different_backward():
  class Doubled(torch_overhead.torch.autograd.Function):
    @staticmethod
    def forward(x):
      return torch_overhead.torch.where(x > 0, x, 0.2 * x)

    @staticmethod
    def setup_context(ctx, inputs, output):
      ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
      (x,) = ctx.saved_tensors
      return torch_overhead.torch.where(x > 0, g, 0.2 * g) * 2.0

  ours = torch_overhead.aten_graphs(torch_overhead.HANDWRITTEN["leaky_relu"][0], 1)
  assert torch_overhead.aten_graphs(Doubled.apply, 1) != ours


def test_array_object_cost_quick_run_writes_its_table(tmp_path):
  """benchmarks/torch_array_overhead.py: one row per op, the geometric mean of its ratios."""
  from crossgrad.benchmarks import torch_array_overhead  # pylint: disable=g-import-not-at-top
  path = tmp_path / "torch_array_overhead.json"
  payload = torch_array_overhead.run(ops=["leaky_relu", "custom_add"], budget_s=0.05,
                                     json_path=str(path))
  ratios = [r["ratio"] for r in payload["rows"]]
  assert [r["op"] for r in payload["rows"]] == ["leaky_relu", "custom_add"]  # As asked.
  assert all(r > 0 for r in ratios)
  assert payload["summary"]["geomean_ratio"] == pytest.approx(
      (ratios[0] * ratios[1]) ** 0.5, rel=1e-3)
  assert json.loads(path.read_text())["summary"]["target_ratio"] == 1.02
