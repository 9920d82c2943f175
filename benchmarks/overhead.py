r"""What an op costs through crossgrad against the same op written by hand.

  python -m crossgrad.benchmarks.overhead [--quick] [--sizes=1000,1000000] [--ops=leaky_relu]

For every registry op with an entry in `handwritten.BASELINES`: one train step, the
gradient of ``sum(op(inputs) * w)`` with respect to the op's differentiable inputs, through
the crossgrad op and through the hand-written `tf.custom_gradient` / `jax.custom_vjp`
op, under `jax.jit`, `tf.function(jit_compile=True)` and `tf.function` (graph, no XLA).
The two run interleaved (alternating who goes first); the table shows medians and the
ratio crossgrad / hand-written. Then the optimised HLO of both versions (and the TF graph
without XLA) is compared: instruction and fusion counts, same structure or not. Ops
without a baseline are listed as such.

A second table isolates forward-mode support: a JAX crossgrad op is a `jax.custom_jvp`
whose reverse mode goes JVP, linearize, transpose; it is timed under `jax.jit` against the
same op definition emitted as a plain `jax.custom_vjp` (`handwritten.custom_vjp_of`), and
their optimised HLO compared (target: the same program, ratio <= 1.05).
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Sequence

from absl import flags
import jax
import jax.numpy as jnp
import numpy as np
import tensorflow as tf

import crossgrad as cg
from crossgrad.benchmarks import handwritten, hlo, timing
from crossgrad.checker import usage

FLAGS = flags.FLAGS

SIZES = (1_000, 1_000_000, 16_000_000)
QUICK_SIZES = (1_000,)
HLO_SIZE = 1_000_000
MODES = ("jax.jit", "tf.function(jit_compile=True)", "tf.function")
XLA_MODES = MODES[:2]
NO_BASELINE = "no hand-written baseline"


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


class Problem:
  """One op at one size: inputs, weights and both versions' steps in every mode."""

  def __init__(self, baseline: handwritten.Baseline, elements: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    self.op = cg.get(baseline.op)
    self.inputs = baseline.inputs(elements, rng)
    self.elements = int(self.inputs[0].size)
    shapes = jax.eval_shape(baseline.jax, *self.inputs)
    self.weights = [rng.standard_normal(s.shape).astype(s.dtype) for s in as_tuple(shapes)]
    diff = self.op.diff_argnums
    fns = {"crossgrad": {"tf": cg.tensorflow.get(self.op, **baseline.params),
                         "jax": cg.jax.get(self.op, **baseline.params)},
           "hand-written": {"tf": baseline.tensorflow, "jax": baseline.jax}}
    self.steps = {who: {"jax.jit": jax_step(f["jax"], diff),
                        "tf.function(jit_compile=True)": tf_step(f["tf"], diff, True),
                        "tf.function": tf_step(f["tf"], diff, False)}
                  for who, f in fns.items()}
    self.steps["custom_vjp"] = {"jax.jit": jax_step(handwritten.custom_vjp_of(
        self.op, self.op.resolve_params(baseline.params)), diff)}
    self.jax_args = (jax.device_put(list(self.inputs)), jax.device_put(self.weights))
    self.tf_args = ([tf.constant(x) for x in self.inputs], [tf.constant(w) for w in self.weights])

  def args(self, mode: str):
    return self.jax_args if mode.startswith("jax") else self.tf_args

  def call(self, who: str, mode: str) -> Callable[[], Any]:
    step, args = self.steps[who][mode], self.args(mode)
    if mode.startswith("jax"):
      return lambda: jax.block_until_ready(step(*args))
    return lambda: step(*args)  # TF runs synchronously: results are ready on return.

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


def _time_rows(problem: Problem, name: str, budget_s: float, min_repeats: int) -> list[tuple]:
  rows = []
  for mode in MODES:
    medians, repeats = timing.calibrated_medians(
        {who: problem.call(who, mode) for who in ("crossgrad", "hand-written")},
        budget_s, min_repeats=min_repeats)
    cg_s, hand_s = medians["crossgrad"], medians["hand-written"]
    rows.append((name, problem.elements, mode, cg_s * 1e3, hand_s * 1e3, cg_s / hand_s,
                 repeats))
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
    return {"sizes": QUICK_SIZES, "budget_s": 0.2, "min_repeats": 3}
  return {"sizes": SIZES, "budget_s": 2.0, "min_repeats": 15}


def run(sizes: Sequence[int] = SIZES, ops: Sequence[str] | None = None, budget_s: float = 2.0,
        min_repeats: int = 15, json_path: str | None = None) -> dict:
  """Runs the benchmark, prints its tables, writes JSON; returns the JSON payload.

  The structure is compared at `HLO_SIZE` elements if that is among ``sizes``, else at
  the smallest size.
  """
  names = list(ops) if ops else cg.names()
  hlo_size = HLO_SIZE if HLO_SIZE in sizes else min(sizes)
  rows, structure_rows, vjp_rows = [], [], []
  missing = [n for n in names if n not in handwritten.BASELINES]
  for name in names:
    if name in missing:
      continue
    baseline = handwritten.BASELINES[name]
    for size in sizes:
      problem = Problem(baseline, size)
      rows.extend(_time_rows(problem, name, budget_s, min_repeats))
      vjp_rows.extend(_custom_vjp_rows(problem, name, budget_s, min_repeats))
      if size == hlo_size:
        structure_rows.extend(_structure_rows(problem, name))
      del problem
  header = ("op", "elements", "mode", "crossgrad ms", "hand-written ms", "ratio", "repeats")
  structure_header = ("op", "elements", "program", "instructions cg", "instructions hand",
                "fusions cg", "fusions hand", "same structure")
  vjp_header = ("op", "elements", "crossgrad ms", "custom_vjp ms", "ratio", "repeats",
                "HLO instructions cg", "HLO instructions custom_vjp", "same HLO")
  xla = [r[5] for r in rows if r[2] in XLA_MODES]
  summary = {"max_ratio_xla": max(xla, default=None),
             "geomean_ratio": {m: float(np.exp(np.mean([np.log(r[5]) for r in rows
                                                        if r[2] == m])))
                               for m in MODES if any(r[2] == m for r in rows)},
             "target_ratio_xla": 1.05,
             "max_ratio_custom_vjp": max((r[4] for r in vjp_rows), default=None),
             "same_hlo_as_custom_vjp": all(r[8] == "yes" for r in vjp_rows)}
  timing.emit("train step (forward + backward): crossgrad vs hand-written "
              "(ratio = crossgrad / hand-written)", header, rows, None)
  timing.emit("compiled structure: crossgrad vs hand-written (instructions: HLO "
              "instructions or TF graph nodes)", structure_header, structure_rows, None)
  timing.emit("reverse mode under jax.jit: crossgrad's custom_jvp op vs the same definition "
              "as a jax.custom_vjp (ratio = crossgrad / custom_vjp)", vjp_header, vjp_rows, None)
  for name in missing:
    print(f"{name}: {NO_BASELINE} (add one to crossgrad/benchmarks/handwritten.py)")
  print(f"max ratio under XLA: {summary['max_ratio_xla']}; geometric means: "
        f"{ {m: round(v, 3) for m, v in summary['geomean_ratio'].items()} }")
  payload = {"title": "crossgrad overhead over hand-written ops",
             "settings": {"sizes": list(sizes), "budget_s": budget_s,
                          "min_repeats": min_repeats, "hlo_size": hlo_size},
             "summary": summary, "rows": [dict(zip(header, r)) for r in rows],
             "structure": [dict(zip(structure_header, r)) for r in structure_rows],
             "custom_vjp": [dict(zip(vjp_header, r)) for r in vjp_rows],
             "no_baseline": [{"op": n, "note": NO_BASELINE} for n in missing]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("overhead")
  timing.define_ints("sizes", "Element counts (default 1e3,1e6,16e6).")
  flags.DEFINE_list("ops", None, "Op names (default all).")
  flags.DEFINE_float("budget_s", None, "Seconds of timing per op, size and mode.")


def main(argv):
  del argv  # Unused.
  kwargs = settings(FLAGS.quick)
  kwargs.update({k: v for k, v in (("sizes", FLAGS.sizes), ("budget_s", FLAGS.budget_s)) if v})
  run(ops=FLAGS.ops, json_path=FLAGS.json, **kwargs)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
