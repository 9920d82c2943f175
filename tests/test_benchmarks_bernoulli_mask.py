"""The bernoulli_mask benchmark's smoke mode runs (timings are not asserted)."""

import json
import os

from crossgrad.benchmarks import bernoulli_mask


def test_smoke_mode_writes_every_ratio(tmp_path):
  path = os.path.join(tmp_path, "bench.json")
  bernoulli_mask.run(smoke=True, json_path=path)
  with open(path) as f:
    results = json.load(f)
  for framework in ("tensorflow", "jax"):
    for noise in ("given_u", "sampled"):
      row = results["frameworks"][framework][noise]
      assert len(row["op_ms_all"]) == len(row["handwritten_ms_all"]) == results["repeats"]
  assert results["environment"]["tensorflow"] and results["environment"]["jax"]
