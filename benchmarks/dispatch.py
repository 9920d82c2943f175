r"""Per-call eager dispatch cost of crossgrad ops against the hand-written ones.

  python -m crossgrad.benchmarks.dispatch [--quick] [--elements=64]

Small inputs, no compilation around the call: TensorFlow eager and JAX op by op, the
forward call alone and the train step of `overhead` (gradient of ``sum(op(inputs) * w)``).
This is where crossgrad's per-call work shows (input conversion, the static checks,
building the custom-gradient closure); under `jax.jit` / `tf.function` it happens once, at
tracing. A crossgrad JAX op is jitted inside, as `jax.numpy`'s functions are, so its call
runs one compiled program where the hand-written op dispatches each operation. The figure
is crossgrad / hand-written, measured interleaved.
"""

from __future__ import annotations

from typing import Sequence

from absl import flags
import jax

import crossgrad as cg
from crossgrad.benchmarks import handwritten, overhead, timing
from crossgrad.cli import usage

FLAGS = flags.FLAGS

ELEMENTS = 64


def _candidates(problem: overhead.Problem, baseline: handwritten.Baseline):
  """``{(framework, what): {who: callable}}`` for both versions."""
  op, diff = problem.op, problem.op.diff_argnums
  fns = {"crossgrad": (cg.tensorflow.get(op, **baseline.params),
                       cg.jax.get(op, **baseline.params)),
         "hand-written": (baseline.tensorflow, baseline.jax)}
  tf_args, jax_args = problem.tf_args, problem.jax_args
  result = {}
  for who, (tf_fn, jax_fn) in fns.items():
    tf_step = overhead.tf_step(tf_fn, diff, eager=True)
    jax_step = overhead.jax_step(jax_fn, diff, jit=False)
    result.setdefault(("tensorflow eager", "forward"), {})[who] = (
        lambda f=tf_fn: f(*tf_args[0]))
    result.setdefault(("tensorflow eager", "forward+backward"), {})[who] = (
        lambda s=tf_step: s(*tf_args))
    result.setdefault(("jax op-by-op", "forward"), {})[who] = (
        lambda f=jax_fn: jax.block_until_ready(f(*jax_args[0])))
    result.setdefault(("jax op-by-op", "forward+backward"), {})[who] = (
        lambda s=jax_step: jax.block_until_ready(s(*jax_args)))
  return result


def settings(quick: bool) -> dict:
  """run()'s arguments for a full or a quick run."""
  if quick:
    return {"budget_s": 0.1, "min_repeats": 3}
  return {"budget_s": 1.0, "min_repeats": 9}


def run(elements: int = ELEMENTS, ops: Sequence[str] | None = None, budget_s: float = 1.0,
        min_repeats: int = 9, json_path: str | None = None) -> dict:
  """Runs the benchmark, prints its table, writes JSON; returns the JSON payload."""
  names = overhead.op_names(ops)
  rows = []
  for name in names:
    baseline = handwritten.BASELINES.get(name)
    if baseline is None:
      continue
    problem = overhead.Problem(baseline, elements, modes=("tf eager", "jax eager"))
    for (framework, what), candidates in _candidates(problem, baseline).items():
      medians, repeats = timing.calibrated_medians(candidates, budget_s, min_repeats=min_repeats)
      ours, theirs = medians["crossgrad"], medians["hand-written"]
      rows.append((name, framework, what, ours * 1e6, theirs * 1e6, ours / theirs,
                   (ours - theirs) * 1e6, repeats))
  missing = [n for n in names if n not in handwritten.BASELINES]
  header = ("op", "framework", "call", "crossgrad us", "hand-written us", "ratio",
            "extra us", "repeats")
  timing.emit(f"eager dispatch, {elements} elements (ratio = crossgrad / hand-written)", header,
              rows, None)
  for name in missing:
    print(f"{name}: {overhead.NO_BASELINE}")
  payload = {"title": "crossgrad eager dispatch overhead",
             "settings": {"elements": elements, "budget_s": budget_s,
                          "min_repeats": min_repeats},
             "rows": [dict(zip(header, r)) for r in rows],
             "no_baseline": [{"op": n, "note": overhead.NO_BASELINE} for n in missing]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("dispatch")
  flags.DEFINE_integer("elements", ELEMENTS, "Input size.")
  flags.DEFINE_list("ops", None, "Op names (default all).")


def main(argv):
  del argv  # Unused.
  run(FLAGS.elements, FLAGS.ops, json_path=FLAGS.json, **settings(FLAGS.quick))


if __name__ == "__main__":
  define_flags()
  usage.run(main)
