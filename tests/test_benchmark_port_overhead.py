"""Smoke run of benchmarks/port_overhead.py: each port computes its original's loss and
gradients (no timings asserted), and a quick run writes its JSON."""

import json

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.benchmarks import port_overhead as bench


@pytest.fixture(name="own_ops")
def _own_ops():
  """The benchmark's ports are removed again (they are registered when it runs)."""
  before = set(cg.names())
  yield
  for name in set(cg.names()) - before:
    cg.unregister(name)


@pytest.mark.usefixtures("own_ops")
def test_ports_agree_with_their_originals(tmp_path):
  runs = bench.variants(rows=4, features=8, modes=("eager",), out_dir=str(tmp_path))
  for name in ("RMSNorm", "SoftClip"):
    original, port = runs[f"eager/{name}/original"](), runs[f"eager/{name}/ported"]()
    assert len(original) == len(port) >= 2
    for a, b in zip(original, port):
      np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                 atol=1e-6)


@pytest.mark.usefixtures("own_ops")
def test_a_quick_run_writes_its_json(tmp_path):
  path = tmp_path / "port.json"
  bench.run(rows=4, features=8, repeats=2, modes=("eager",), json_path=str(path))
  report = json.loads(path.read_text())
  assert [(r["mode"], r["definition"]) for r in report["rows"]] == [
      ("eager", "RMSNorm"), ("eager", "SoftClip")]
  assert all(r["ratio"] > 0 for r in report["rows"])
  assert report["environment"]["torch"]
