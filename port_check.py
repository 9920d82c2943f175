r"""Checks a ported TF1 gradient override against the legacy graph; non-zero on a mismatch.

Runs the legacy (NumPy forward, TF ``grad(op, *grads)``) pair as a real PyFunc under
`gradient_override_map` in a `tf.compat.v1` graph and session (the oracle), then the
op `crossgrad.tf1.port` makes of it in TF2 (eager, graph) and JAX (eager, jit), on the
same inputs and output cotangents, and prints the forward and gradient differences:

  python -m crossgrad.port_check --module=legacy_add.py --forward=forward_func \
      --grad=backprop_func --shapes=2,3:2,3:2,3
  crossgrad-port-check --module=my_project.layers --forward=fwd --grad=bwd --dtype=float64

``--module`` is a dotted module name or a ``.py`` path. Where the legacy grad itself
calls the module's random-name ``py_func`` helper, ``--drop_in`` (default ``py_func``)
swaps that helper for `crossgrad.tf1.py_func` for the TF2 and JAX runs only.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Sequence

from absl import app
from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.checker import engine
from crossgrad.checker import selection

FLAGS = flags.FLAGS


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_string("module", None, "Module (dotted name or .py path) holding the legacy "
                      "pair.", required=True)
  flags.DEFINE_string("forward", None, "Name of the NumPy forward in the module.",
                      required=True)
  flags.DEFINE_string("grad", None, "Name of the TF grad(op, *grads) in the module.",
                      required=True)
  flags.DEFINE_string("shapes", None, "Input shapes, ':'-separated, e.g. 2,3:2,3 (default "
                      "4,3 for every input).")
  flags.DEFINE_enum("dtype", "float32", ["float32", "float64"], "Input dtype.")
  flags.DEFINE_integer("num_outputs", 1, "How many arrays the forward returns.")
  flags.DEFINE_string("drop_in", "py_func", "Module attribute replaced by "
                      "crossgrad.tf1.py_func for the TF2 and JAX runs ('' for none).")
  flags.DEFINE_integer("seed", 0, "Seed of the inputs and cotangents.")
  flags.DEFINE_string("json", None, "Also write the rows as JSON to this path.")


RUNS = (("tensorflow", "eager"), ("tensorflow", "graph"), ("jax", "eager"), ("jax", "jit"))


def _attribute(module, dotted: str):
  """``module.a.b`` for ``dotted="a.b"`` (e.g. ``np.square`` from the module's imports)."""
  value = module
  for part in dotted.split("."):
    value = getattr(value, part)
  return value


def parse_shapes(text: str | None, n_inputs: int) -> list[tuple[int, ...]]:
  if not text:
    return [(4, 3)] * n_inputs
  shapes = [tuple(int(d) for d in part.split(",") if d.strip()) for part in text.split(":")]
  if len(shapes) != n_inputs:
    raise cg.CrossgradError("one shape per input of the forward", argument="--shapes",
                            expected=n_inputs, actual=len(shapes))
  return shapes


def compare(forward, grad, inputs: Sequence[np.ndarray], cotangents: Sequence[np.ndarray],
            *, name: str = "ported", num_outputs: int = 1, before_port=None) -> list[dict]:
  """Rows of max relative error of each port run against the legacy graph."""
  from crossgrad import tf1  # pylint: disable=g-import-not-at-top
  dtype = inputs[0].dtype
  legacy_out, legacy_grads = tf1.legacy_vjp(forward, grad, inputs, cotangents,
                                            Tout=[dtype] * num_outputs, name=name)
  legacy_grads = [np.zeros_like(x) if g is None else g for x, g in zip(inputs, legacy_grads)]
  if before_port is not None:
    before_port()
  op = tf1.port(name, forward, grad, gradient="declared", num_outputs=num_outputs,
                input_names=[f"x{i}" for i in range(len(inputs))], register=False)
  tolerance = engine.TOLERANCE[dtype.name]
  rows = []
  for backend, mode in RUNS:
    outputs, grads = getattr(cg, backend).evaluate(op, {}, inputs, cotangents, mode=mode)
    for check, got, want in (("forward", outputs, legacy_out), ("grad", grads, legacy_grads)):
      errors = [engine.max_relative_error(a, b) for a, b in zip(got, want)]
      worst = int(np.argmax(errors))
      rows.append({"backend": backend, "mode": mode, "check": check,
                   "error": errors[worst], "tolerance": tolerance,
                   "ok": errors[worst] <= tolerance,
                   "worst": f"{'output' if check == 'forward' else 'input'} {worst}"})
  return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
  lines = [f"{'backend':11s} {'mode':6s} {'check':8s} {'max rel err':>11s} "
           f"{'tolerance':>9s}  status  worst"]
  for r in rows:
    lines.append(f"{r['backend']:11s} {r['mode']:6s} {r['check']:8s} {r['error']:11.2e} "
                 f"{r['tolerance']:9.0e}  {'ok' if r['ok'] else 'FAIL':6s}  {r['worst']}")
  return "\n".join(lines)


def main(argv):
  if len(argv) > 1:
    print(f"[crossgrad] unexpected arguments: {argv[1:]}", file=sys.stderr)
    return 2
  from crossgrad import tf1  # pylint: disable=g-import-not-at-top
  try:
    module = selection.load_module(FLAGS.module)
    forward, grad = _attribute(module, FLAGS.forward), _attribute(module, FLAGS.grad)
    n_inputs = len(tf1.forward_input_names(FLAGS.forward, forward))
    rng = np.random.default_rng(FLAGS.seed)
    inputs = [rng.standard_normal(s).astype(FLAGS.dtype)
              for s in parse_shapes(FLAGS.shapes, n_inputs)]
    shapes = [np.broadcast_shapes(*[x.shape for x in inputs])] * FLAGS.num_outputs
    cotangents = [rng.standard_normal(s).astype(FLAGS.dtype) for s in shapes]

    def drop_in():
      if FLAGS.drop_in and hasattr(module, FLAGS.drop_in):
        setattr(module, FLAGS.drop_in, tf1.py_func)

    rows = compare(forward, grad, inputs, cotangents, name=FLAGS.forward,
                   num_outputs=FLAGS.num_outputs, before_port=drop_in)
  except cg.CrossgradError as e:
    print(e, file=sys.stderr)
    return 2
  except (AttributeError, ImportError, OSError) as e:
    print(f"[crossgrad] {e}", file=sys.stderr)
    return 2
  print(f"legacy {FLAGS.module}: {FLAGS.forward} / {FLAGS.grad}, "
        f"{FLAGS.dtype}, inputs {[x.shape for x in inputs]}")
  print(table(rows))
  failing = [r for r in rows if not r["ok"]]
  print(f"{len(rows)} comparisons with the tf.compat.v1 graph, {len(failing)} failing")
  if FLAGS.json:
    with open(FLAGS.json, "w") as f:
      json.dump(rows, f, indent=2)
  return 1 if failing else 0


def run():
  """Console-script entry point (``crossgrad-port-check``)."""
  define_flags()
  app.run(main)


if __name__ == "__main__":
  run()
