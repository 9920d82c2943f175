r"""Checks a ported TF1 gradient override against the legacy graph.

Runs the legacy (NumPy forward, TF ``grad(op, *grads)``) pair as a real PyFunc under
`gradient_override_map` in a `tf.compat.v1` graph and session (the oracle), then the
op `crossgrad.tf1.port` makes of it in TF2 (eager, graph) and JAX (eager, jit), on the
same inputs and output cotangents, and prints the forward and gradient differences:

  python -m crossgrad.tf1.port_check --module=legacy_add.py --forward=forward_func \
      --grad=backprop_func --shapes=2,3:2,3:2,3
  crossgrad-port-check --module=legacy_int_inputs.py --forward=lookup --grad=lookup_grad \
      --shapes=5,3:4 --dtypes=float32,int32 --ranges=-1,1:0,5 --output_shapes=4,3

``--module`` is a dotted module name or a ``.py`` path; ``--forward`` and ``--grad`` are
attributes of it (``np.round``), or functions nested in one (``build.inner``, without
defaults or variables of the function around it). The inputs are the forward's
parameters without defaults (``--inputs`` names them otherwise). Integer inputs get no
gradient. NumPy's global RNG and TF's global seed are reset to ``--seed`` before every
run, so NumPy-random code draws the same numbers each time; TF random ops in a gradient
differ between a graph and eager runs: declare ``--tolerance`` for them. Where the legacy
grad calls the module's random-name ``py_func`` helper, ``--drop_in`` (default
``py_func``) swaps it for `crossgrad.tf1.py_func` in the TF2 and JAX runs.

Exit status: 0 when everything agrees, 1 for a gradient mismatch, 2 for any problem with
the module or the arguments (including a forward that differs between runs).
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any, Callable, Sequence

from absl import flags
import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import engine
from crossgrad.checker import selection
from crossgrad.cli import usage
from crossgrad.registry.errors import CrossgradError

FLAGS = flags.FLAGS


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_string("module", None, "Module (dotted name or .py path) holding the legacy "
                      "pair.", required=True)
  flags.DEFINE_string("forward", None, "The NumPy forward: an attribute of the module "
                      "('forward', 'np.round') or a function nested in one ('build.fwd').",
                      required=True)
  flags.DEFINE_string("grad", None, "The TF grad(op, *grads), named like --forward.",
                      required=True)
  flags.DEFINE_list("inputs", None, "Names of the forward's inputs (default: its "
                    "parameters without defaults).")
  flags.DEFINE_string("shapes", None, "Input shapes, ':'-separated, e.g. 2,3:2,3 (default "
                      "4,3 for every input).")
  flags.DEFINE_enum("dtype", "float32", ["float32", "float64"], "Dtype of floating inputs.")
  flags.DEFINE_list("dtypes", None, "One dtype per input, e.g. float32,int32 (overrides "
                    "--dtype).")
  flags.DEFINE_string("ranges", None, "Input ranges lo,hi, ':'-separated (default: standard "
                      "normal floats, integers in [0, 4)).")
  flags.DEFINE_string("sample", None, "A function sample(rng) -> inputs in the module, in "
                      "place of --shapes and --ranges.")
  flags.DEFINE_list("nondiff", [], "Inputs without a gradient, by name or index (integer "
                    "inputs always).")
  flags.DEFINE_integer("num_outputs", 1, "How many arrays the forward returns.")
  flags.DEFINE_string("output_shapes", None, "Output shapes, ':'-separated (default: the "
                      "inputs' broadcast shape).")
  flags.DEFINE_float("tolerance", None, "Largest relative error accepted (default: the "
                     "cross-check's for the dtype).")
  flags.DEFINE_string("drop_in", "py_func", "Module attribute replaced by "
                      "crossgrad.tf1.py_func for the TF2 and JAX runs ('' for none).")
  flags.DEFINE_integer("seed", 0, "Seed of the inputs and cotangents, and of NumPy's and "
                       "TF's global RNGs before every run.")
  flags.DEFINE_string("json", None, "Also write the rows as JSON to this path.")


RUNS = (("tensorflow", "eager"), ("tensorflow", "graph"), ("jax", "eager"), ("jax", "jit"))


class ForwardDiffers(CrossgradError):
  """The port's forward differs from the legacy graph's: the forward is not reproducible."""


def resolve(module, dotted: str, flag: str) -> Any:
  """``module.a.b``; a part that is no attribute may name a function nested in the last."""
  value = module
  for part in dotted.split("."):
    if hasattr(value, part):
      value = getattr(value, part)
      continue
    code = getattr(value, "__code__", None)
    inner = next((c for c in (code.co_consts if code else ())
                  if isinstance(c, types.CodeType) and c.co_name == part), None)
    if inner is None:
      raise CrossgradError(f"{dotted!r} not found", argument=f"--{flag}",
                              actual=f"no {part!r} in {getattr(value, '__name__', value)}")
    if inner.co_freevars:
      raise CrossgradError(
          "the nested function uses variables of the function around it",
          argument=f"--{flag}", actual=", ".join(inner.co_freevars),
          hint="Move it to module level, or make those variables module globals")
    value = types.FunctionType(inner, value.__globals__, part)
  if not callable(value):
    raise CrossgradError("not a function", argument=f"--{flag}", actual=dotted)
  return value


def parse_shapes(text: str | None, n: int, flag: str = "--shapes",
                 default: tuple[int, ...] = (4, 3)) -> list[tuple[int, ...]]:
  if not text:
    return [default] * n
  try:
    shapes = [tuple(int(d) for d in part.split(",") if d.strip()) for part in text.split(":")]
  except ValueError:
    raise CrossgradError("shapes are integers", argument=flag,
                            expected="e.g. 2,3:4", actual=text) from None
  if len(shapes) != n:
    raise CrossgradError("one shape per entry", argument=flag, expected=n,
                            actual=len(shapes))
  return shapes


def _per_input(values: Sequence[str] | None, n: int, flag: str) -> list[str] | None:
  if values is not None and len(values) != n:
    raise CrossgradError("one entry per input of the forward", argument=flag,
                            expected=n, actual=len(values))
  return values


def make_inputs(n: int, rng: np.random.Generator, *, shapes: str | None, dtype: str,
                dtypes: Sequence[str] | None, ranges: str | None,
                sample: Callable[[Any], Sequence[Any]] | None) -> list[np.ndarray]:
  """The inputs: ``sample(rng)`` or drawn per --shapes, --dtypes and --ranges."""
  dtypes = _per_input(dtypes, n, "--dtypes") or [dtype] * n
  try:
    dtypes = [np.dtype(d) for d in dtypes]
  except TypeError as e:
    raise CrossgradError("unknown dtype", argument="--dtypes", actual=str(e)) from None
  if sample is not None:
    drawn = [np.asarray(x) for x in sample(rng)]
    if len(drawn) != n:
      raise CrossgradError("the sample gives the wrong number of inputs",
                              argument="--sample", expected=n, actual=len(drawn))
    return [x.astype(d) if np.issubdtype(x.dtype, np.floating) and d.kind == "f" else x
            for x, d in zip(drawn, dtypes)]
  bounds = [None] * n
  if ranges:
    try:
      bounds = [tuple(float(v) for v in part.split(",")) for part in ranges.split(":")]
    except ValueError:
      raise CrossgradError("ranges are numbers lo,hi", argument="--ranges",
                              actual=ranges) from None
    if len(bounds) != n or any(len(b) != 2 for b in bounds):
      raise CrossgradError("one range lo,hi per input", argument="--ranges",
                              expected=f"{n} ranges", actual=ranges)
  inputs = []
  for shape, d, bound in zip(parse_shapes(shapes, n), dtypes, bounds):
    if d.kind in "iu":
      lo, hi = bound or (0, 4)
      inputs.append(rng.integers(int(lo), int(hi), shape).astype(d))
    elif bound is None:
      inputs.append(rng.standard_normal(shape).astype(d))
    else:
      inputs.append(rng.uniform(*bound, shape).astype(d))
  return inputs


def _reseed(seed: int | None):
  if seed is not None:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    np.random.seed(seed)
    tf.random.set_seed(seed)


def compare(forward, grad, inputs: Sequence[np.ndarray], cotangents: Sequence[np.ndarray],
            *, name: str = "ported", num_outputs: int = 1, output_shapes=None,
            nondiff: Sequence[int | str] = (), input_names: Sequence[str] | None = None,
            tolerance: float | None = None, seed: int | None = None,
            before_port=None) -> list[dict]:
  """Rows of max relative error of each port run against the legacy graph.

  Integer inputs get no gradient; ``seed`` resets NumPy's and TF's global RNGs before
  every run. Raises `ForwardDiffers` where the forward is not reproducible.
  """
  from crossgrad import tf1  # pylint: disable=g-import-not-at-top
  names = list(input_names or [f"x{i}" for i in range(len(inputs))])
  unknown = [n for n in nondiff if n not in names and str(n) not in map(str, range(len(names)))]
  if unknown:
    raise CrossgradError("unknown input", op=name, argument="--nondiff",
                            expected=f"one of {names} or an index", actual=unknown)
  nondiff = {names.index(n) if n in names else int(n) for n in nondiff}
  nondiff |= {i for i, x in enumerate(inputs) if not np.issubdtype(x.dtype, np.floating)}
  dtype = next(x.dtype for x in inputs if np.issubdtype(x.dtype, np.floating))
  _reseed(seed)
  legacy_out, legacy_grads = tf1.legacy_vjp(forward, grad, inputs, cotangents,
                                            Tout=[dtype] * num_outputs, name=name)
  if before_port is not None:
    before_port()
  op = tf1.port(name, forward, grad, gradient="declared", num_outputs=num_outputs,
                output_shapes=output_shapes, nondiff=sorted(nondiff), input_names=names,
                register=False)
  tolerance = tolerance if tolerance is not None else engine.TOLERANCE[dtype.name]
  diff = [i for i in range(len(inputs)) if i not in nondiff]
  want_grads = [np.zeros_like(inputs[i]) if legacy_grads[i] is None else legacy_grads[i]
                for i in diff]
  rows = []
  for backend, mode in RUNS:
    _reseed(seed)
    outputs, grads = base.load(backend).evaluate(op, {}, inputs, cotangents, mode=mode)
    for check, got, want in (("forward", outputs, legacy_out),
                             ("grad", [grads[i] for i in diff], want_grads)):
      errors = [engine.max_relative_error(a, b) for a, b in zip(got, want)]
      worst = int(np.argmax(errors))
      rows.append({"backend": backend, "mode": mode, "check": check,
                   "error": errors[worst], "tolerance": tolerance,
                   "ok": errors[worst] <= tolerance,
                   "worst": f"output {worst}" if check == "forward" else names[diff[worst]]})
  bad = [r for r in rows if r["check"] == "forward" and not r["ok"]]
  if bad:
    raise ForwardDiffers(
        "the ported forward differs from the legacy graph's, so the forward is not "
        "reproducible (random without NumPy's global RNG, or state)", op=name,
        actual=f"max relative error {max(r['error'] for r in bad):.2e}",
        hint="Draw with np.random (reset by --seed), or declare --tolerance")
  return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
  lines = [f"{'backend':11s} {'mode':6s} {'check':8s} {'max rel err':>11s} "
           f"{'tolerance':>9s}  status  worst"]
  for r in rows:
    lines.append(f"{r['backend']:11s} {r['mode']:6s} {r['check']:8s} {r['error']:11.2e} "
                 f"{r['tolerance']:9.0e}  {'ok' if r['ok'] else 'FAIL':6s}  {r['worst']}")
  return "\n".join(lines)


def run_check() -> tuple[list[dict], list[np.ndarray]]:
  """Everything main does before printing: (rows, inputs)."""
  module = selection.load_module(FLAGS.module)
  from crossgrad import tf1  # pylint: disable=g-import-not-at-top
  forward, grad = resolve(module, FLAGS.forward, "forward"), resolve(module, FLAGS.grad, "grad")
  names = tf1.forward_input_names(FLAGS.forward, forward, FLAGS.inputs)
  rng = np.random.default_rng(FLAGS.seed)
  sample = resolve(module, FLAGS.sample, "sample") if FLAGS.sample else None
  inputs = make_inputs(len(names), rng, shapes=FLAGS.shapes, dtype=FLAGS.dtype,
                       dtypes=FLAGS.dtypes, ranges=FLAGS.ranges, sample=sample)
  if not any(np.issubdtype(x.dtype, np.floating) for x in inputs):
    raise CrossgradError("no floating input, so no gradient to check", argument="--dtypes")
  if FLAGS.output_shapes:
    output_shapes = parse_shapes(FLAGS.output_shapes, FLAGS.num_outputs, "--output_shapes")
  else:
    try:
      output_shapes = [np.broadcast_shapes(*[x.shape for x in inputs])] * FLAGS.num_outputs
    except ValueError:
      raise CrossgradError("the inputs' shapes do not broadcast to one output shape",
                              argument="--output_shapes", actual=[x.shape for x in inputs],
                              hint="Pass --output_shapes") from None
  dtype = next(x.dtype for x in inputs if np.issubdtype(x.dtype, np.floating))
  cotangents = [rng.standard_normal(s).astype(dtype) for s in output_shapes]

  def drop_in():
    if FLAGS.drop_in and hasattr(module, FLAGS.drop_in):
      setattr(module, FLAGS.drop_in, tf1.py_func)

  rows = compare(forward, grad, inputs, cotangents, name=FLAGS.forward.replace(".", "_"),
                 num_outputs=FLAGS.num_outputs, output_shapes=output_shapes,
                 nondiff=FLAGS.nondiff, input_names=names, tolerance=FLAGS.tolerance,
                 seed=FLAGS.seed, before_port=drop_in)
  return rows, inputs


def main(argv):
  if len(argv) > 1:
    print(f"[crossgrad] unexpected arguments: {argv[1:]}", file=sys.stderr)
    return 2
  try:
    rows, inputs = run_check()
  except CrossgradError as e:
    print(e, file=sys.stderr)
    return 2
  except Exception as e:  # pylint: disable=broad-except
    # The legacy module or its functions failed to load or run: not a mismatch.
    print(f"[crossgrad] the legacy module failed: {type(e).__name__}: {e}", file=sys.stderr)
    return 2
  print(f"legacy {FLAGS.module}: {FLAGS.forward} / {FLAGS.grad}, inputs "
        f"{[f'{x.dtype}{list(x.shape)}' for x in inputs]}")
  print(table(rows))
  failing = [r for r in rows if not r["ok"]]
  print(f"{len(rows)} comparisons with the tf.compat.v1 graph, {len(failing)} failing")
  if FLAGS.json:
    with open(FLAGS.json, "w") as f:
      json.dump(rows, f, indent=2)
  return 1 if failing else 0


def run():
  """Console-script entry point (``crossgrad-port-check``)."""
  usage.console(main, __name__, define_flags)


if __name__ == "__main__":
  run()
