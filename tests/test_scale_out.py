"""Every built-in op gives the single-device gradients when sharded over 4 logical CPUs.

The work runs in tests/scale_out_worker.py, in its own process, because TensorFlow and
JAX fix their device count when they start (and this pytest process may have started
them already). Gradients under `jax.jit` with `NamedSharding`, inside `shard_map` (with a
`psum`) and in a `tf.distribute.MirroredStrategy` step (plain and XLA-compiled, with an
all-reduce) are compared with a single-device run, with the NumPy reference VJP and with
JAX autodiff of the op's forward (exact ops) or surrogate, which never uses the backward.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from crossgrad.checker import engine
from crossgrad.registry.ops import BUILTIN

DEVICES = 4
TOLERANCE = engine.TOLERANCE["float32"]
PLACEMENTS = {"jax_single_device", "jax_named_sharding", "jax_named_sharding_unbatched",
              "jax_shard_map", "jax_shard_map_psum", "tf_mirrored", "tf_mirrored_jit",
              "tf_mirrored_all_reduce", "tf_mirrored_all_reduce_jit"}


@pytest.fixture(scope="module")
def results():
  worker = pathlib.Path(__file__).with_name("scale_out_worker.py")
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  done = subprocess.run([sys.executable, str(worker), f"--devices={DEVICES}", "--planted"],
                        capture_output=True, text=True, env=env, timeout=600, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  return json.loads(done.stdout.strip().splitlines()[-1])


def _entries(results, name):
  entries = [e for e in results["ops"] if e["op"] == name]
  assert entries, f"{name} was not run"
  return entries


def test_each_framework_saw_the_logical_devices(results):
  assert results["devices"] == {"jax": DEVICES, "tensorflow": DEVICES}


@pytest.mark.parametrize("name", [op.name for op in BUILTIN])
def test_sharded_gradients_match_single_device(results, name):
  for entry in _entries(results, name):
    assert "error" not in entry, entry
    rows = {row["placement"]: row for row in entry["rows"]}
    assert set(rows) == PLACEMENTS
    for placement, row in rows.items():
      where = f"{name} {entry['params']} {placement}"
      assert row["devices"] == (1 if placement == "jax_single_device" else DEVICES), where
      assert row["vs_single"] <= TOLERANCE, where
      assert row["vs_reference"] <= TOLERANCE, where
      if row["vs_autodiff"] is not None:
        assert row["vs_autodiff"] <= TOLERANCE, where


def test_planted_wrong_backward_is_caught_on_every_placement(results):
  """A backward with slope 0.3 where the forward's is 0.2: consistent, yet wrong."""
  (entry,) = _entries(results, "planted_leaky_relu")
  assert {row["placement"] for row in entry["rows"]} == PLACEMENTS
  for row in entry["rows"]:
    assert row["vs_single"] <= TOLERANCE, row
    assert row["vs_autodiff"] > 0.05, row
