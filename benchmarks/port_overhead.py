r"""What crossgrad-port costs in torch: a ported torch.autograd.Function against its original.

Ports two Functions (an RMS norm over the last axis, a tanh soft clip) with
`crossgrad.port`, then times one value-and-gradient of ``sum(f(x, ...) ** 2)`` for the
original (``Fn.apply``) and for the port (``cg.torch.get(op)``, the op crossgrad emits),
eager and under ``torch.compile``. Runs are interleaved; each figure is the median of
``--repeats`` runs, reported as the port's time over the original's (target <= 1.05):

  python -m crossgrad.benchmarks.port_overhead [--quick] [--rows=1024] [--modes=eager,compile]
"""

from __future__ import annotations

import os
import sys
import tempfile

from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.benchmarks import timing
from crossgrad.cli import usage

FLAGS = flags.FLAGS
ROWS, FEATURES, REPEATS = 1024, 256, 200
MODES = ("eager", "compile")
_SOURCE = '''
import torch


class RMSNorm(torch.autograd.Function):
  @staticmethod
  def forward(ctx, x, weight):
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    ctx.save_for_backward(x, weight, inv)
    return x * inv * weight

  @staticmethod
  def backward(ctx, g):
    x, weight, inv = ctx.saved_tensors
    gw = g * weight
    grad_x = inv * gw - x * inv.pow(3) * (gw * x).mean(dim=-1, keepdim=True)
    return grad_x, (g * x * inv).reshape(-1, x.shape[-1]).sum(0)


class SoftClip(torch.autograd.Function):
  @staticmethod
  def forward(ctx, x, limit):
    y = limit * torch.tanh(x / limit)
    ctx.save_for_backward(y)
    ctx.limit = limit
    return y

  @staticmethod
  def backward(ctx, g):
    (y,) = ctx.saved_tensors
    return g * (1 - (y / ctx.limit) ** 2), None


SAMPLES = {"RMSNorm": lambda rng: (rng.standard_normal((4, 8)), rng.uniform(0.5, 1.5, 8)),
           "SoftClip": lambda rng: (rng.standard_normal((4, 8)), 2.0)}
GRADIENTS = {"RMSNorm": "exact", "SoftClip": "exact"}
'''


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("port_overhead")
  flags.DEFINE_integer("rows", None, f"Rows of the input (default {ROWS}, --quick: 8); it "
                       f"has {FEATURES} features (--quick: 16).")
  flags.DEFINE_integer("repeats", None, f"Timed runs of each variant, interleaved (default "
                       f"{REPEATS}, --quick: 5).")
  flags.DEFINE_list("modes", list(MODES), "torch modes to time: eager, compile.")


def ported(out_dir: str):
  """(the source module, {definition: its port's op name}), proved in eager torch."""
  from crossgrad.checker import selection  # pylint: disable=g-import-not-at-top
  from crossgrad.port import run as port_run  # pylint: disable=g-import-not-at-top
  from crossgrad.port.prove import CheckSettings  # pylint: disable=g-import-not-at-top
  path = os.path.join(out_dir, "bench_functions.py")
  with open(path, "w", encoding="utf-8") as f:
    f.write(_SOURCE)
  results = port_run.files([path], out_dir=out_dir,
                           settings=CheckSettings(modes=("eager",), dtypes=("float32",)))
  bad = [r for r in results if r.status != "ported"]
  if bad:
    raise cg.CrossgradError("the benchmark's functions did not port", argument=path,
                            actual=[(r.definition.name, r.status, r.reasons) for r in bad])
  module = sys.modules.get("bench_functions") or selection.load_module(path)
  return module, {r.definition.name: r.op for r in results}


def variants(rows: int, features: int, modes, out_dir: str) -> dict[str, object]:
  """name (``mode/definition/original|ported``) -> zero-argument callable returning the
  loss and gradients, computed."""
  import torch  # pylint: disable=g-import-not-at-top
  module, ops = ported(out_dir)
  rng = np.random.default_rng(0)
  x = torch.tensor(rng.standard_normal((rows, features)), dtype=torch.float32,
                   requires_grad=True)
  w = torch.tensor(rng.uniform(0.5, 1.5, features), dtype=torch.float32, requires_grad=True)
  calls = {
      "RMSNorm": ((x, w), module.RMSNorm.apply, cg.torch.get(ops["RMSNorm"])),
      "SoftClip": ((x,), lambda a: module.SoftClip.apply(a, 2.0),
                   cg.torch.get(ops["SoftClip"], limit=2.0)),
  }
  found = {}
  for name, (inputs, original, port) in calls.items():
    for label, fn in (("original", original), ("ported", port)):
      def step(*args, fn=fn):
        loss = (fn(*args) ** 2).sum()
        return (loss, *torch.autograd.grad(loss, args))
      for mode in modes:
        run = torch.compile(step) if mode == "compile" else step
        found[f"{mode}/{name}/{label}"] = lambda run=run, inputs=inputs: run(*inputs)
  return found


def run(rows: int = ROWS, features: int = FEATURES, repeats: int = REPEATS,
        modes=MODES, json_path: str | None = None) -> dict:
  """Runs the benchmark, prints its table, writes JSON; returns the JSON payload."""
  import torch  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory(prefix="crossgrad-port-bench-") as out_dir:
    medians = timing.interleaved_medians(variants(rows, features, modes, out_dir), repeats,
                                        warmup=2)
  print(f"value and gradient of sum(f(x)**2), x of ({rows}, {features}) float32, median of "
        f"{repeats} interleaved runs")
  print(f"{'mode':8s} {'definition':10s} {'original us':>12s} {'ported us':>10s} "
        f"{'ported/original':>16s}")
  table = []
  for key in sorted({k.rsplit("/", 1)[0] for k in medians}, key=lambda k: (
      list(modes).index(k.split("/")[0]), k)):
    mode, name = key.split("/")
    original, port = medians[f"{key}/original"], medians[f"{key}/ported"]
    table.append({"mode": mode, "definition": name, "original_s": original,
                  "ported_s": port, "ratio": port / original})
    print(f"{mode:8s} {name:10s} {original * 1e6:12.1f} {port * 1e6:10.1f} "
          f"{port / original:16.2f}")
  report = {"rows_shape": [rows, features], "repeats": repeats, "rows": table,
            "environment": {**timing.environment(), "torch_threads": torch.get_num_threads()}}
  if json_path:
    timing.write_json(json_path, report)
  return report


def main(argv):
  del argv  # Unused.
  quick = FLAGS.quick
  bad = sorted(set(FLAGS.modes) - set(MODES))
  if bad or not FLAGS.modes:
    return usage.fail(f"[crossgrad] --modes: expected some of {','.join(MODES)}, got "
                      f"{','.join(FLAGS.modes)}")
  run(rows=FLAGS.rows or (8 if quick else ROWS), features=16 if quick else FEATURES,
      repeats=FLAGS.repeats or (5 if quick else REPEATS), modes=tuple(FLAGS.modes),
      json_path=FLAGS.json)
  return 0


if __name__ == "__main__":
  define_flags()
  usage.run(main)
