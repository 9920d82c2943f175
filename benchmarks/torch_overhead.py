r"""What a crossgrad torch op costs against the same op as a hand-written autograd.Function.

  python -m crossgrad.benchmarks.torch_overhead [--quick] [--sizes=1e6,16e6] [--ops=leaky_relu]

One train step, the gradient of ``sum(op(inputs) * w)`` with respect to the op's
differentiable inputs, through ``crossgrad.torch.get(op)`` and through a
`torch.autograd.Function` written by hand (`handwritten_torch`: the same formulas in
torch, no validation), eagerly and under ``torch.compile(fullgraph=True)`` (the loss
compiled; its backward runs as the compiled backward graph). The two run interleaved (alternating who
goes first); the table shows medians and the ratio crossgrad / hand-written, measured in
the same run. A second table compares the ATen ops of both compiled forward and backward
graphs (AOTAutograd).
"""

from __future__ import annotations

import types
from typing import Any, Callable, Sequence

import numpy as np
import torch
from absl import flags

import crossgrad as cg
from crossgrad.benchmarks import handwritten_torch, timing
from crossgrad.cli import usage

FLAGS = flags.FLAGS
SIZES = (1_000_000, 16_000_000)
QUICK_SIZES = (1_000,)
MODES = ("eager", "torch.compile")
TARGET_RATIO = 1.05


# Ops whose inputs are vectors of one size: the baseline and the number of inputs.
HANDWRITTEN = {"leaky_relu": (handwritten_torch.BASELINES["leaky_relu"], 1),
               "custom_add": (handwritten_torch.BASELINES["custom_add"], 3)}


def train_step(fn: Callable[..., Any], compiled: bool, diff: Sequence[int] | None = None):
  """``step(args, weights)``: the gradient of sum(fn(*args) * w) (summed over outputs and
  weights) with respect to ``args[diff]`` (default every arg); ``compiled``: the loss under
  ``torch.compile(fullgraph=True, dynamic=False)``, in a code object of its own (Dynamo
  caches per code object)."""
  def loss(args, weights):
    outputs = fn(*args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return sum(torch.sum(o * w) for o, w in zip(outputs, weights))

  if compiled:
    loss = torch.compile(types.FunctionType(loss.__code__.replace(), loss.__globals__, "loss",
                                            None, loss.__closure__),
                         fullgraph=True, dynamic=False)

  def step(args, weights):
    return torch.autograd.grad(loss(args, weights),
                               args if diff is None else [args[i] for i in diff])

  return step


def aten_graphs(fn: Callable[..., Any], n_inputs: int) -> dict[str, list[str]]:
  """The ATen ops of the compiled loss's forward and backward graphs (AOTAutograd)."""
  from torch._dynamo.backends.common import aot_autograd  # pylint: disable=g-import-not-at-top
  found = {}

  def capture(kind):
    def compiler(graph_module, example_inputs):
      del example_inputs
      found[kind] = [str(node.target) for node in graph_module.graph.nodes
                     if node.op == "call_function"]
      return graph_module.forward
    return compiler

  torch.compiler.reset()
  backend = aot_autograd(fw_compiler=capture("forward"), bw_compiler=capture("backward"))
  loss = torch.compile(lambda args, w: torch.sum(fn(*args) * w), backend=backend,
                       fullgraph=True)
  args = [torch.randn(8, requires_grad=True) for _ in range(n_inputs)]
  torch.autograd.grad(loss(args, torch.randn(8)), args)
  return found


def _structure_row(name: str) -> tuple:
  handwritten, n_inputs = HANDWRITTEN[name]
  ours, theirs = aten_graphs(cg.torch.get(name), n_inputs), aten_graphs(handwritten, n_inputs)
  return (name, len(ours["forward"]), len(ours["backward"]), len(theirs["forward"]),
          len(theirs["backward"]), "yes" if ours == theirs else "NO")


def _time_rows(name: str, elements: int, budget_s: float, min_repeats: int) -> list[tuple]:
  handwritten, n_inputs = HANDWRITTEN[name]
  torch.compiler.reset()  # Each size compiles afresh, with static shapes.
  rng = np.random.default_rng(0)
  args = [torch.tensor(rng.standard_normal(elements, dtype=np.float32), requires_grad=True)
          for _ in range(n_inputs)]
  w = torch.tensor(rng.standard_normal(elements, dtype=np.float32))
  fns = {"crossgrad": cg.torch.get(name), "hand-written": handwritten}
  rows = []
  for mode in MODES:
    steps = {who: train_step(fn, mode != "eager") for who, fn in fns.items()}
    grads = {who: s(args, [w]) for who, s in steps.items()}  # Compiles; same results.
    for a, b in zip(grads["crossgrad"], grads["hand-written"]):
      torch.testing.assert_close(a, b)
    medians, repeats = timing.calibrated_medians(
        {who: (lambda s=s: s(args, [w])) for who, s in steps.items()}, budget_s,
        min_repeats=min_repeats)
    cg_s, hand_s = medians["crossgrad"], medians["hand-written"]
    rows.append((name, elements, mode, cg_s * 1e3, hand_s * 1e3, cg_s / hand_s, repeats))
  return rows


def settings(quick: bool) -> dict:
  """run()'s arguments for a full or a quick run."""
  if quick:
    return {"sizes": QUICK_SIZES, "budget_s": 0.2, "min_repeats": 3}
  return {"sizes": SIZES, "budget_s": 3.0, "min_repeats": 15}


def run(sizes: Sequence[int] = SIZES, ops: Sequence[str] | None = None, budget_s: float = 3.0,
        min_repeats: int = 15, json_path: str | None = None, threads: int | None = None) -> dict:
  """Runs the benchmark, prints its table, writes JSON; returns the JSON payload.

  ``threads``: torch's intra-op threads (default: torch's own choice). One thread gives
  steadier medians on a shared, loaded machine.
  """
  if threads:
    torch.set_num_threads(threads)
  rows, structure_rows = [], []
  for name in ops or HANDWRITTEN:
    structure_rows.append(_structure_row(name))
    for size in sizes:
      rows.extend(_time_rows(name, size, budget_s, min_repeats))
  header = ("op", "elements", "mode", "crossgrad ms", "hand-written ms", "ratio", "repeats")
  structure_header = ("op", "forward ops cg", "backward ops cg", "forward ops hand",
                      "backward ops hand", "same graphs")
  summary = {"max_ratio": max(r[5] for r in rows), "target_ratio": TARGET_RATIO,
             "same_compiled_graphs": all(r[-1] == "yes" for r in structure_rows),
             "torch": torch.__version__, "threads": torch.get_num_threads()}
  timing.emit("torch train step (forward + backward): crossgrad vs hand-written "
              "autograd.Function (ratio = crossgrad / hand-written)", header, rows, None)
  timing.emit("compiled structure: ATen ops of the forward and backward graphs "
              "(AOTAutograd) of the compiled loss", structure_header, structure_rows, None)
  print(f"max ratio: {summary['max_ratio']:.3f} (target <= {TARGET_RATIO}); same compiled "
        f"graphs: {summary['same_compiled_graphs']}")
  payload = {"title": "crossgrad torch overhead over hand-written autograd.Functions",
             "settings": {"sizes": list(sizes), "budget_s": budget_s,
                          "min_repeats": min_repeats},
             "summary": summary, "rows": [dict(zip(header, r)) for r in rows],
             "structure": [dict(zip(structure_header, r)) for r in structure_rows]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("torch_overhead")
  timing.define_ints("sizes", "Element counts (default 1e6,16e6).")
  flags.DEFINE_list("ops", None, f"Op names (default {','.join(HANDWRITTEN)}).")
  flags.DEFINE_float("budget_s", None, "Seconds of timing per op, size and mode.")
  flags.DEFINE_integer("threads", None, "torch's intra-op threads (default: torch's choice).")


def main(argv):
  del argv  # Unused.
  kwargs = settings(FLAGS.quick)
  kwargs.update({k: v for k, v in (("sizes", FLAGS.sizes), ("budget_s", FLAGS.budget_s)) if v})
  run(ops=FLAGS.ops, json_path=FLAGS.json, threads=FLAGS.threads, **kwargs)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
