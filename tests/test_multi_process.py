"""Crossgrad ops in 2-process data-parallel steps give the single-process gradients.

Per framework, `crossgrad.distributed.launch` starts 2 local processes of
tests/multi_process_worker.py (JAX: `jax.distributed` with gloo; TensorFlow:
`MultiWorkerMirroredStrategy`; PyTorch: `DistributedDataParallel` over gloo, eager and
`torch.compile`). Their input gradients (each process's rows) and all-reduced weight
gradients are compared with the same framework's single-process run over the global batch
(made here), with the NumPy reference VJP, and with JAX autodiff of the forward or surrogate
(which never uses the backward, so the planted wrong backward fails it in every placement).

CI runs a few ops; ``CROSSGRAD_MULTI_PROCESS_OPS=all`` runs every built-in op and prints
the largest |multi - single| gradient per framework (run with ``-s``).
"""

import concurrent.futures
import os
import pathlib
import sys

import numpy as np
import pytest

from crossgrad.checker import engine
from crossgrad.distributed import launch
from crossgrad.registry.ops import BUILTIN
import multi_process_worker as worker
import op_batches

PROCESSES = 2
TOLERANCE = engine.TOLERANCE["float32"]
FRAMEWORKS = ("jax", "tensorflow", "torch")
OPS = os.environ.get("CROSSGRAD_MULTI_PROCESS_OPS", "positive_matmul").split(",")
SELECTED = [op for op in BUILTIN if op.name in OPS or OPS == ["all"]] + [op_batches.planted_op()]


def _launch(framework, out):
  ports = launch.free_ports(PROCESSES)
  command = [sys.executable, str(pathlib.Path(worker.__file__)), f"--framework={framework}",
             f"--processes={PROCESSES}", f"--ports={','.join(map(str, ports))}",
             f"--ops={','.join(OPS)}", "--planted", f"--out={out}"]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  launch.run([command + [f"--process_id={i}"] for i in range(PROCESSES)],
             [f"{framework} worker {i}" for i in range(PROCESSES)], timeout=600,
             idle_timeout=300, env=env)
  return [np.load(out / f"{framework}_{i}.npz") for i in range(PROCESSES)]


def _error(got, want):
  return max(engine.max_relative_error(g, w) for g, w in zip(got, want))


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
  """Every framework's 2-process run, the three side by side: framework -> the
  processes' saved gradients."""
  out = tmp_path_factory.mktemp("multi_process")
  with concurrent.futures.ThreadPoolExecutor(len(FRAMEWORKS)) as pool:
    runs = {name: pool.submit(_launch, name, out) for name in FRAMEWORKS}
    return {name: run.result() for name, run in runs.items()}


def _rows(framework, parts):
  """One row per (op, params, placement): errors against each oracle."""
  rows = []
  for op in SELECTED:
    for index, params in enumerate(op.param_sets):
      params = op.resolve_params(params)
      for part in parts:
        assert f"{op.name}|{index}|error" not in part, str(part[f"{op.name}|{index}|error"])
      examples, stacked, cots = op_batches.batch(op, params, index, PER_BATCH)
      single = worker.gradients(framework, op, params, stacked, cots)
      reference = op_batches.reference_grads(op, params, examples, cots)
      autodiff = op_batches.autodiff_grads(op, params, stacked, cots)
      total = lambda grads: [g.sum(axis=0) for g in grads]
      for placement in worker.PLACEMENTS[framework]:
        key = lambda kind, k, p: parts[p][f"{op.name}|{index}|{placement}|{kind}|{k}"]
        n = len(op.diff_argnums)
        inputs = [np.concatenate([key("input", k, p) for p in range(PROCESSES)])
                  for k in range(n)]
        weights = [[key("weight", k, p) for k in range(n)] for p in range(PROCESSES)]
        rows.append({
            "op": op.name, "params": index, "placement": placement,
            "vs_single": max(_error(inputs, single[placement][0]),
                             _error(weights[0], single[placement][1])),
            "abs_vs_single": max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(
                inputs + weights[0], single[placement][0] + single[placement][1])),
            "vs_reference": max(_error(inputs, reference), _error(weights[0], total(reference))),
            "vs_autodiff": None if autodiff is None else max(
                _error(inputs, autodiff), _error(weights[0], total(autodiff))),
            "processes_agree": all(_error(w, weights[0]) == 0.0 for w in weights)})
  return rows


PER_BATCH = worker.PER_PROCESS * PROCESSES


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_two_processes_give_the_single_process_gradients(framework, launched):
  rows = _rows(framework, launched[framework])
  assert {(r["op"], r["placement"]) for r in rows} == {
      (op.name, p) for op in SELECTED for p in worker.PLACEMENTS[framework]}
  print(f"\n{framework}: largest |multi - single| gradient "
        f"{max(r['abs_vs_single'] for r in rows):.3g} over {len(rows)} rows")
  for row in rows:
    assert row["processes_agree"], row
    assert row["vs_single"] <= TOLERANCE, row
    assert row["vs_reference"] <= TOLERANCE, row
    if row["op"] == "planted_leaky_relu":
      assert row["vs_autodiff"] > 0.05, row  # Caught: 0.3 where the slope is 0.2.
    elif row["vs_autodiff"] is not None:
      assert row["vs_autodiff"] <= TOLERANCE, row
