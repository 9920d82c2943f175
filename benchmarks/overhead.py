r"""What an op costs through crossgrad against the same op written by hand.

  python -m crossgrad.benchmarks.overhead [--quick] [--sizes=1000,1000000] [--ops=leaky_relu]

For every registry op with an entry in `handwritten.BASELINES` (and `handwritten.STE_SIGN`,
the sign straight-through estimator): one train step, the gradient of ``sum(op(inputs) *
w)`` with respect to the op's differentiable inputs, through the crossgrad op and through
the hand-written `tf.custom_gradient` / `jax.custom_vjp` / `torch.autograd.Function`
(`handwritten_torch`) op, in every mode: TensorFlow eager, `tf.function` (graph, no XLA),
`tf.function(jit_compile=True)`, JAX eager (op by op), `jax.jit`, torch eager and
`torch.compile(fullgraph=True)`. The two run interleaved (alternating who goes first); the
table shows medians, the ratio crossgrad / hand-written and the quartiles of the per-round
ratios (the noise). Targets: <= 1.05 under XLA, <= 1.10 in the other modes. A second
baseline, the hand-written op making crossgrad's checks by hand (`handwritten_checked`:
input count and dtypes, the op's value checks, the standard's NaN rules), is timed in the
same rounds: ``checked ratio`` is crossgrad / it (target <= 1.10 in every mode) and
``extra us`` the microseconds a crossgrad step takes beyond it. Then the optimised HLO of
both versions (and the TF graph without XLA) is compared: instruction and fusion counts,
same structure or not. Ops without a baseline are listed as such.

A second table isolates forward-mode support: a JAX crossgrad op is a `jax.custom_jvp`
whose reverse mode goes JVP, linearize, transpose; it is timed under `jax.jit` against the
same op definition emitted as a plain `jax.custom_vjp` (`handwritten.custom_vjp_of`), and
their optimised HLO compared (target: the same program, ratio <= 1.05).
"""

from __future__ import annotations

import collections
import statistics
from typing import Any, Callable, Sequence

from absl import flags
import jax
import jax.numpy as jnp
import numpy as np
import tensorflow as tf

import crossgrad as cg
from crossgrad.benchmarks import (handwritten, handwritten_checked, handwritten_torch, hlo,
                                  timing, torch_overhead)
from crossgrad.cli import usage

FLAGS = flags.FLAGS

SIZES = (1_000, 1_000_000, 16_000_000)
QUICK_SIZES = (1_000,)
HLO_SIZE = 1_000_000
MODES = ("tf eager", "tf.function", "tf.function(jit_compile=True)", "jax eager", "jax.jit",
         "torch eager", "torch.compile")
XLA_MODES = ("jax.jit", "tf.function(jit_compile=True)")
QUICK_MODES = tuple(m for m in MODES if m != "torch.compile")  # Inductor: ~10 s an op.
TARGETS = {"xla": 1.05, "eager and graph": 1.10}
TARGET_CHECKED = 1.10  # Against the hand-written op making the same checks, every mode.
CONTESTANTS = ("crossgrad", "hand-written", "checked")
NO_BASELINE = "no hand-written baseline"
NO_TORCH_BASELINE = "no hand-written torch baseline (handwritten_torch.py)"


def as_tuple(outputs) -> tuple:
  return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def jax_step(fn: Callable[..., Any], diff: Sequence[int], jit: bool = True):
  """(jit of) the gradient of sum(fn(*args) * w) with respect to args[diff]."""
  def loss(diff_args, args, weights):
    full = list(args)
    for i, x in zip(diff, diff_args):
      full[i] = x
    return sum(jnp.sum(o * w) for o, w in zip(as_tuple(fn(*full)), weights))

  grad = jax.grad(loss)

  def step(args, weights):
    return grad([args[i] for i in diff], args, weights)

  return jax.jit(step) if jit else step


def tf_step(fn: Callable[..., Any], diff: Sequence[int], jit_compile: bool = False,
            eager: bool = False):
  """(tf.function of) the gradient of sum(fn(*args) * w) with respect to args[diff]."""
  def step(args, weights):
    with tf.GradientTape() as tape:
      for i in diff:
        tape.watch(args[i])
      outputs = as_tuple(fn(*args))
      loss = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outputs, weights)])
    return tape.gradient(loss, [args[i] for i in diff])

  return step if eager else tf.function(step, jit_compile=jit_compile, autograph=False)


def op_names(ops: Sequence[str] | None = None) -> list[str]:
  """``ops``, or every registry op and then the benchmarks' own (`handwritten.STE_SIGN`)."""
  if ops:
    return list(ops)
  return cg.names() + [n for n in handwritten.BASELINES if n not in cg.names()]


def op_of(baseline: handwritten.Baseline):
  """The baseline's `OpDef`."""
  return baseline.op if isinstance(baseline.op, cg.OpDef) else cg.get(baseline.op)


class Problem:
  """One op at one size: inputs, weights and both versions' steps in every mode."""

  def __init__(self, baseline: handwritten.Baseline, elements: int, seed: int = 0,
               modes: Sequence[str] = MODES):
    rng = np.random.default_rng(seed)
    self.op = op_of(baseline)
    self.name = self.op.name
    self.inputs = baseline.inputs(elements, rng)
    self.elements = int(self.inputs[0].size)
    shapes = jax.eval_shape(baseline.jax, *self.inputs)
    self.weights = [rng.standard_normal(s.shape).astype(s.dtype) for s in as_tuple(shapes)]
    diff = self.op.diff_argnums
    n_inputs = len(self.inputs)
    fns = {"crossgrad": {"tf": cg.tensorflow.get(self.op, **baseline.params),
                         "jax": cg.jax.get(self.op, **baseline.params)},
           "hand-written": {"tf": baseline.tensorflow, "jax": baseline.jax},
           "checked": {framework: handwritten_checked.checked(self.name, framework, fn,
                                                               n_inputs, diff)
                       for framework, fn in (("tf", baseline.tensorflow),
                                             ("jax", baseline.jax))}}
    self.steps = {who: {"jax.jit": jax_step(f["jax"], diff),
                        "jax eager": jax_step(f["jax"], diff, jit=False),
                        "tf.function(jit_compile=True)": tf_step(f["tf"], diff, True),
                        "tf.function": tf_step(f["tf"], diff, False),
                        "tf eager": tf_step(f["tf"], diff, eager=True)}
                  for who, f in fns.items()}
    self.steps["custom_vjp"] = {"jax.jit": jax_step(handwritten.custom_vjp_of(
        self.op, self.op.resolve_params(baseline.params)), diff)}
    self.jax_args = (jax.device_put(list(self.inputs)), jax.device_put(self.weights))
    self.tf_args = ([tf.constant(x) for x in self.inputs], [tf.constant(w) for w in self.weights])
    self.torch_args = None
    if self.name in handwritten_torch.BASELINES and any(m.startswith("torch") for m in modes):
      self._add_torch(handwritten_torch.BASELINES[self.name], baseline.params, modes)

  def _add_torch(self, hand_written: Callable[..., Any], params: dict, modes: Sequence[str]):
    """Both versions' torch steps (eager, and compiled afresh with static shapes)."""
    torch = torch_overhead.torch
    diff = self.op.diff_argnums
    args = [torch.tensor(x, requires_grad=i in diff) for i, x in enumerate(self.inputs)]
    self.torch_args = (args, [torch.tensor(w) for w in self.weights])
    if "torch.compile" in modes:
      torch.compiler.reset()
    checked = handwritten_checked.checked(self.name, "torch", hand_written, len(args), diff)
    for who, fn in (("crossgrad", cg.torch.get(self.op, **params)),
                    ("hand-written", hand_written), ("checked", checked)):
      for mode in ("torch eager", "torch.compile"):
        if mode in modes:
          self.steps[who][mode] = torch_overhead.train_step(fn, mode != "torch eager", diff)

  def modes(self, modes: Sequence[str]) -> list[str]:
    """The modes of ``modes`` both versions have a step in."""
    return [m for m in modes if m in self.steps["crossgrad"] and m in self.steps["hand-written"]]

  def args(self, mode: str):
    if mode.startswith("torch"):
      return self.torch_args
    return self.jax_args if mode.startswith("jax") else self.tf_args

  def call(self, who: str, mode: str) -> Callable[[], Any]:
    step, args = self.steps[who][mode], self.args(mode)
    if mode.startswith("jax"):
      return lambda: jax.block_until_ready(step(*args))
    # TF and torch on CPU run synchronously: results are ready on return.
    return lambda: step(*args)

  def optimized_hlo(self, who: str, mode: str) -> str:
    step, args = self.steps[who][mode], self.args(mode)
    if mode.startswith("jax"):
      return step.lower(*args).compile().as_text()
    return step.experimental_get_compiler_ir(*args)(stage="optimized_hlo")

  def graph_ops(self, who: str) -> list[str]:
    """The op types of the TF graph (no XLA) the step runs, nested functions included."""
    graph = self.steps[who]["tf.function"].get_concrete_function(*self.tf_args).graph
    graph_def = graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return sorted(n.op for n in nodes)


def _time_rows(problem: Problem, budget_s: float, min_repeats: int,
               modes: Sequence[str]) -> list[tuple]:
  rows = []
  for mode in problem.modes(modes):
    samples = timing.calibrated_samples(
        {who: problem.call(who, mode) for who in CONTESTANTS}, budget_s,
        min_repeats=min_repeats)
    cg_s, hand_s, checked_s = (statistics.median(samples[who]) for who in CONTESTANTS)
    q1, q3 = timing.ratio_quartiles(samples["crossgrad"], samples["hand-written"])
    rows.append((problem.name, problem.elements, mode, cg_s * 1e3, hand_s * 1e3,
                 cg_s / hand_s, q1, q3, len(samples["crossgrad"]), checked_s * 1e3,
                 cg_s / checked_s, (cg_s - checked_s) * 1e6))
  return rows


def _custom_vjp_rows(problem: Problem, name: str, budget_s: float,
                     min_repeats: int) -> list[tuple]:
  """crossgrad's JAX op against the same definition as a plain `jax.custom_vjp`: time under
  `jax.jit` and whether the optimised HLO is the same."""
  medians, repeats = timing.calibrated_medians(
      {who: problem.call(who, "jax.jit") for who in ("crossgrad", "custom_vjp")}, budget_s,
      min_repeats=min_repeats)
  ours, theirs = (hlo.summary(problem.optimized_hlo(who, "jax.jit"))
                  for who in ("crossgrad", "custom_vjp"))
  return [(name, problem.elements, medians["crossgrad"] * 1e3, medians["custom_vjp"] * 1e3,
           medians["crossgrad"] / medians["custom_vjp"], repeats, ours["instructions"],
           theirs["instructions"], "yes" if ours["signature"] == theirs["signature"] else "NO")]


def _difference(ours: collections.Counter, theirs: collections.Counter) -> str:
  """``+Transpose x2 -Const``: graph ops crossgrad has more (+) or fewer (-) of."""
  def terms(sign, counter):
    return [f"{sign}{op}" + (f" x{n}" if n > 1 else "") for op, n in sorted(counter.items())]
  return " ".join(terms("+", ours - theirs) + terms("-", theirs - ours))


def _structure_rows(problem: Problem, name: str) -> list[tuple]:
  """Optimised HLO under each XLA mode, and the plain TF graph, of both versions."""
  rows = []
  for mode in XLA_MODES:
    cg_hlo, hand_hlo = (hlo.summary(problem.optimized_hlo(who, mode))
                        for who in ("crossgrad", "hand-written"))
    rows.append((name, problem.elements, mode + " HLO", cg_hlo["instructions"],
                 hand_hlo["instructions"], cg_hlo["fusions"], hand_hlo["fusions"],
                 "yes" if cg_hlo["signature"] == hand_hlo["signature"] else "NO"))
  cg_ops, hand_ops = (collections.Counter(problem.graph_ops(who))
                      for who in ("crossgrad", "hand-written"))
  rows.append((name, problem.elements, "tf.function graph", cg_ops.total(), hand_ops.total(),
               "-", "-", "yes" if cg_ops == hand_ops else
               "NO: " + _difference(cg_ops, hand_ops)))
  return rows


def settings(quick: bool) -> dict:
  """run()'s arguments for a full or a quick run."""
  if quick:
    return {"sizes": QUICK_SIZES, "budget_s": 0.05, "min_repeats": 3, "modes": QUICK_MODES}
  return {"sizes": SIZES, "budget_s": 2.0, "min_repeats": 15, "modes": MODES}


def target(mode: str) -> float:
  """The ratio ``mode``'s rows must not exceed (`TARGETS`)."""
  return TARGETS["xla"] if mode in XLA_MODES else TARGETS["eager and graph"]


def _summary(rows: list[tuple], vjp_rows: list[tuple]) -> dict:
  """The worst ratio under XLA and elsewhere, the geometric mean per mode, the targets and
  the rows over them."""
  other = [r[5] for r in rows if r[2] not in XLA_MODES]
  over = [r for r in rows if r[5] > target(r[2])]
  return {"rows_over_target": f"{len(over)} of {len(rows)}",
          "rows_over_target_by_mode": {m: sum(r[2] == m for r in over)
                                       for m in MODES if any(r[2] == m for r in rows)},
          "max_ratio_xla": max((r[5] for r in rows if r[2] in XLA_MODES), default=None),
          "max_ratio_eager_graph": max(other, default=None),
          "geomean_ratio": {m: float(np.exp(np.mean([np.log(r[5]) for r in rows
                                                     if r[2] == m])))
                            for m in MODES if any(r[2] == m for r in rows)},
          "target_ratio_xla": TARGETS["xla"],
          "target_ratio_eager_graph": TARGETS["eager and graph"],
          "max_ratio_checked": max((r[10] for r in rows), default=None),
          "rows_over_checked_target": f"{sum(r[10] > TARGET_CHECKED for r in rows)} of "
                                      f"{len(rows)}",
          "max_extra_us_over_checked": max((r[11] for r in rows), default=None),
          "target_ratio_checked": TARGET_CHECKED,
          "max_ratio_custom_vjp": max((r[4] for r in vjp_rows), default=None),
          "same_hlo_as_custom_vjp": all(r[8] == "yes" for r in vjp_rows)}


def run(sizes: Sequence[int] = SIZES, ops: Sequence[str] | None = None, budget_s: float = 2.0,
        min_repeats: int = 15, json_path: str | None = None,
        modes: Sequence[str] = MODES, threads: int | None = None) -> dict:
  """Runs the benchmark, prints its tables, writes JSON; returns the JSON payload.

  ``threads``: torch's intra-op threads (default: torch's own choice; one thread keeps
  torch's OpenMP workers from spinning against each other on a loaded machine).

  The structure is compared at `HLO_SIZE` elements if that is among ``sizes``, else at
  the smallest size (when ``modes`` has the XLA modes and `tf.function`); the custom_vjp
  table needs `jax.jit` in ``modes``.
  """
  if threads:
    torch_overhead.torch.set_num_threads(threads)
  names = op_names(ops)
  hlo_size = HLO_SIZE if HLO_SIZE in sizes else min(sizes)
  rows, structure_rows, vjp_rows = [], [], []
  missing = [n for n in names if n not in handwritten.BASELINES]
  for name in names:
    if name in missing:
      continue
    for size in sizes:
      problem = Problem(handwritten.BASELINES[name], size, modes=modes)
      rows.extend(_time_rows(problem, budget_s, min_repeats, modes))
      if "jax.jit" in modes:
        vjp_rows.extend(_custom_vjp_rows(problem, name, budget_s, min_repeats))
      if size == hlo_size and {*XLA_MODES, "tf.function"} <= set(modes):
        structure_rows.extend(_structure_rows(problem, name))
      del problem
  header = ("op", "elements", "mode", "crossgrad ms", "hand-written ms", "ratio",
            "ratio q1", "ratio q3", "repeats", "checked ms", "checked ratio", "extra us")
  structure_header = ("op", "elements", "program", "instructions cg", "instructions hand",
                "fusions cg", "fusions hand", "same structure")
  vjp_header = ("op", "elements", "crossgrad ms", "custom_vjp ms", "ratio", "repeats",
                "HLO instructions cg", "HLO instructions custom_vjp", "same HLO")
  summary = _summary(rows, vjp_rows)
  timing.emit("train step (forward + backward): crossgrad vs hand-written "
              "(ratio = crossgrad / hand-written; q1, q3: quartiles of the per-round "
              "ratios; checked: hand-written with crossgrad's checks, extra us = crossgrad "
              "- checked per step)", header, rows, None)
  timing.emit("compiled structure: crossgrad vs hand-written (instructions: HLO "
              "instructions or TF graph nodes)", structure_header, structure_rows, None)
  timing.emit("reverse mode under jax.jit: crossgrad's custom_jvp op vs the same definition "
              "as a jax.custom_vjp (ratio = crossgrad / custom_vjp)", vjp_header, vjp_rows, None)
  no_torch = [n for n in names if n not in missing and n not in handwritten_torch.BASELINES]
  for name in missing:
    print(f"{name}: {NO_BASELINE} (add one to crossgrad/benchmarks/handwritten.py)")
  print(f"max ratio under XLA: {summary['max_ratio_xla']}, elsewhere: "
        f"{summary['max_ratio_eager_graph']}; geometric means: "
        f"{ {m: round(v, 3) for m, v in summary['geomean_ratio'].items()} }; against the "
        f"checked hand-written op: max ratio {summary['max_ratio_checked']}, max extra "
        f"{summary['max_extra_us_over_checked']} us per step")
  payload = {"title": "crossgrad overhead over hand-written ops",
             "settings": {"sizes": list(sizes), "budget_s": budget_s,
                          "min_repeats": min_repeats, "hlo_size": hlo_size,
                          "modes": list(modes),
                          "torch_threads": torch_overhead.torch.get_num_threads()},
             "summary": summary, "rows": [dict(zip(header, r)) for r in rows],
             "structure": [dict(zip(structure_header, r)) for r in structure_rows],
             "custom_vjp": [dict(zip(vjp_header, r)) for r in vjp_rows],
             "no_baseline": [{"op": n, "note": NO_BASELINE} for n in missing] + [
                 {"op": n, "note": NO_TORCH_BASELINE} for n in no_torch]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("overhead")
  timing.define_ints("sizes", "Element counts (default 1e3,1e6,16e6).")
  flags.DEFINE_list("ops", None, "Op names (default all).")
  flags.DEFINE_float("budget_s", None, "Seconds of timing per op, size and mode.")
  flags.DEFINE_list("modes", None, f"Modes (default all: {','.join(MODES)}).")
  flags.DEFINE_integer("threads", None, "torch's intra-op threads (default: torch's choice).")


def main(argv):
  del argv  # Unused.
  kwargs = settings(FLAGS.quick)
  kwargs.update({k: v for k, v in (("sizes", FLAGS.sizes), ("budget_s", FLAGS.budget_s),
                                   ("modes", FLAGS.modes)) if v})
  run(ops=FLAGS.ops, json_path=FLAGS.json, threads=FLAGS.threads, **kwargs)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
