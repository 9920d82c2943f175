"""``search`` rows (`crossgrad.checker.search`): a property-based search over shapes and
values drawn from the sample finds a backward that is wrong only beyond the sample, shrinks
it to its smallest input, diagnoses it there and writes a repro; correct ops, kinked ones
and ones with a restricted domain included, stay green."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import crossgrad as cg
import test_engine_properties
from crossgrad.checker import search
from crossgrad.registry.ops import BUILTIN

EXAMPLES = 60


def _softplus_forward(xp, x):
  return xp.where(x > 20, x, xp.log1p(xp.exp(xp.minimum(x, 20.0)))), (x,)


def _sigmoid(xp, x):
  return 1 / (1 + xp.exp(-x))


def _softplus_backward(xp, r, g):
  return (xp.where(r[0] > 20, g, g * _sigmoid(xp, r[0])),)


def _softplus_switching_at_4(xp, r, g):
  return (xp.where(r[0] > 4, g, g * _sigmoid(xp, r[0])),)


def _mean_forward(xp, x):
  return xp.mean(x), (x,)


def _normal(*shape):
  return lambda rng: (rng.standard_normal(shape),)


SOFTPLUS_WRONG = cg.OpDef("t_search_softplus_at_4", _softplus_forward, _softplus_switching_at_4,
                          sample=_normal(3, 4))
MEAN_WRONG = cg.OpDef("t_search_mean_rows", _mean_forward,
                      lambda xp, r, g: (g * xp.ones_like(r[0]) / r[0].shape[0],),
                      sample=_normal(6))

CORRECT = [
    cg.OpDef("t_search_softplus", _softplus_forward, _softplus_backward, sample=_normal(3, 4)),
    cg.OpDef("t_search_mean", _mean_forward,
             lambda xp, r, g: (g * xp.ones_like(r[0]) / r[0].size,), sample=_normal(6)),
    cg.OpDef("t_search_relu", lambda xp, x: (xp.maximum(x, 0.0), (x,)),  # A kink at 0.
             lambda xp, r, g: (xp.where(r[0] > 0, g, 0.0 * g),), sample=_normal(4, 3)),
    cg.OpDef("t_search_abs", lambda xp, x: (xp.abs(x), (x,)),
             lambda xp, r, g: (g * xp.sign(r[0]),), sample=_normal(5)),
    cg.OpDef("t_search_log", lambda xp, x: (xp.log(x), (x,)),  # Positive inputs only.
             lambda xp, r, g: (g / r[0],),
             sample=lambda rng: (rng.uniform(0.5, 2.0, (3, 2)),)),
    cg.OpDef("t_search_matmul", lambda xp, a, b: (a @ b, (a, b)),
             lambda xp, r, g: (g @ xp.matrix_transpose(r[1]), xp.matrix_transpose(r[0]) @ g),
             sample=lambda rng: (rng.standard_normal((2, 3)), rng.standard_normal((3, 4)))),
    cg.OpDef("t_search_bias_tanh", lambda xp, x, b: (xp.tanh(x + b), (xp.tanh(x + b), x, b)),
             lambda xp, r, g: (xp.unbroadcast(g * (1 - r[0] ** 2), r[1]),
                               xp.unbroadcast(g * (1 - r[0] ** 2), r[2])),
             sample=lambda rng: (rng.standard_normal((4, 3)), rng.standard_normal(3))),
]


def _search(op):
  sample = [np.asarray(x, np.float64) for x in op.sample(np.random.default_rng(0))]
  return search.smallest_failure(op, {}, sample, EXAMPLES)


def test_planted_value_bug_is_found_and_shrunk_to_one_element():
  """Right on the standard-normal sample (below 4), wrong between 4 and 20."""
  found = _search(SOFTPLUS_WRONG)
  (x,) = found.inputs
  assert x.size == 1 and 4 < float(x.ravel()[0]) <= 20, x
  sigmoid = 1 / (1 + np.exp(-x.ravel()[0]))  # The backward's 1 over the true derivative.
  assert found.diagnosis.input == "x"
  assert found.diagnosis.kind == "scale"
  assert found.diagnosis.factor == pytest.approx(1 / sigmoid, rel=1e-5)


def test_planted_shape_bug_is_found_on_an_extra_axis():
  """mean's backward divides by x.shape[0]: right for the 1-D sample only."""
  found = _search(MEAN_WRONG)
  (x,) = found.inputs
  assert x.ndim == 2 and found.diagnosis.kind == "scale"
  assert found.diagnosis.factor == pytest.approx(x.shape[1], rel=1e-5)


@pytest.mark.parametrize("op", CORRECT, ids=lambda op: op.name)
def test_correct_ops_give_no_failure(op):
  assert _search(op) is None


def test_builtin_ops_pass_the_search():
  report = cg.cross_check(list(BUILTIN), backends=[], variants="none", search=EXAMPLES)
  rows = [r for r in report.rows if r.check == "search"]
  assert rows and all(r.ok for r in rows), report.table(rows=[r for r in rows if not r.ok])


def test_a_search_row_names_the_input_its_values_and_the_diagnosis():
  report = cg.cross_check([SOFTPLUS_WRONG], backends=[], variants="none", search=EXAMPLES)
  assert all(r.ok for r in report.rows if r.check != "search")  # Green on its sample.
  (row,) = report.failures
  assert row.check == "search" and row.backend == "numpy" and row.dtype == "float64"
  assert row.note.startswith(f"the smallest failing input of {EXAMPLES} examples (x: (3, 4)"
                             " -> (1, 1)"), row.note
  assert "x (1, 1) = [[" in row.note and row.diagnosis.message in row.note
  assert row.diagnosis.file.endswith("test_search.py") and row.diagnosis.line


def test_the_binary_searches_and_writes_a_repro(tmp_path):
  module = tmp_path / "softplus_ops.py"
  module.write_text(textwrap.dedent("""
      import crossgrad as cg

      def forward(xp, x):
        return xp.where(x > 20, x, xp.log1p(xp.exp(xp.minimum(x, 20.0)))), (x,)

      def backward(xp, r, g):
        return (xp.where(r[0] > 4, g, g / (1 + xp.exp(-r[0]))),)

      cg.register(cg.OpDef("t_search_bin", forward, backward,
                           sample=lambda rng: (rng.standard_normal((3, 4)),)))
      """))
  run = subprocess.run(
      [sys.executable, "-m", "crossgrad.check", f"--module={module}", "--backends=jax",
       "--modes=eager", "--dtypes=float64", "--variants=none", "--search=40",
       f"--repro_dir={tmp_path / 'repro'}"], capture_output=True, text=True, cwd=tmp_path)
  assert run.returncode == 1, run.stdout + run.stderr
  script = tmp_path / "repro" / "search_t_search_bin.py"
  assert f"[crossgrad] repro: {script}" in run.stdout
  replay = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              p for p in sys.path if p)})
  assert replay.returncode == 0, replay.stderr
  assert "FAIL" in replay.stdout and "fd" in replay.stdout


@pytest.mark.parametrize("bad", [-1, 2.5, True])
def test_a_bad_count_is_a_crossgrad_error(bad):
  with pytest.raises(cg.CrossgradError, match="search takes a count of examples"):
    cg.cross_check([SOFTPLUS_WRONG], backends=[], search=bad)


@pytest.mark.parametrize("family", sorted(test_engine_properties.FAMILIES))
def test_the_random_correct_families_give_no_failure(family):
  """The engine property tests' correct ops (elementwise, broadcasting, reductions, matmul,
  piecewise, sorting, inverses of well-conditioned matrices, logarithms, maxima, labels
  read with axis=1): none is flagged at any example the search draws."""
  for seed in range(3):
    made = test_engine_properties.FAMILIES[family](np.random.default_rng([seed, 17]))
    op = cg.OpDef(f"t_search_{family}_{seed}", made.forward, made.backward,
                  sample=made.sample, nondiff=made.nondiff, check_inputs=made.check_inputs)
    sample = [np.asarray(x, np.float64) if np.issubdtype(np.asarray(x).dtype, np.floating)
              else np.asarray(x) for x in op.sample(np.random.default_rng(seed))]
    assert search.smallest_failure(op, {}, sample, EXAMPLES, seed) is None, (family, seed)
