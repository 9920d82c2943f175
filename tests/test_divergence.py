"""The first diverging xp call between a backend and the reference, on real numerics: the
kind, the line and the call it names, in the backends and modes where each occurs."""

import dataclasses
import json
import os
import types

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.checker.diagnosis import classify, divergence, program, repro
from crossgrad.checker.diagnosis.divergence import find_divergence
from crossgrad.checker.diagnosis.kinds import Kind

F32 = np.float32


def _line(text: str) -> int:
  """The line of this file holding ``text`` (once)."""
  with open(__file__, encoding="utf-8") as f:
    found = [i for i, line in enumerate(f, 1) if text in line and "_line(" not in line]
  assert len(found) == 1, (text, found)
  return found[0]


def _naive_variance(xp, x):
  v = xp.mean(x * x, axis=-1) - xp.mean(x, axis=-1) ** 2  # The subtraction cancels.
  return v, (x,)


def _naive_variance_backward(xp, residuals, g):
  (x,) = residuals
  return (2.0 * g[..., None] * (x - xp.mean(x, axis=-1, keepdims=True)) / x.shape[-1],)


VARIANCE = cg.OpDef("t_naive_variance", _naive_variance, _naive_variance_backward)


def _inverse(xp, a):
  y = xp.linalg.inv(a)
  return y, (y,)


def _inverse_backward(xp, residuals, g):
  (y,) = residuals
  return (-(y.mT @ g @ y.mT),)


INVERSE = cg.OpDef("t_inverse", _inverse, _inverse_backward)


def _pca(xp, x):
  covariance = x.mT @ x / x.shape[0]
  _, vectors = xp.linalg.eigh(covariance)
  return x @ vectors, (vectors,)


def _pca_backward(xp, residuals, g):
  (vectors,) = residuals
  return (g @ vectors.mT,)


PCA = cg.OpDef("t_pca", _pca, _pca_backward, gradient="declared")


def _log(xp, x):
  return xp.log(x), (x,)


def _log_backward(xp, residuals, g):
  (x,) = residuals
  return (g / x,)


LOG = cg.OpDef("t_log", _log, _log_backward)


def _naive_logsumexp(xp, x):
  total = xp.sum(xp.exp(x), axis=-1)  # Subnormal terms: flushed to 0 by XLA on CPU.
  return xp.log(total), (x, total)


def _naive_logsumexp_backward(xp, residuals, g):
  x, total = residuals
  return (xp.exp(x) / total[..., None] * g[..., None],)


LOGSUMEXP = cg.OpDef("t_naive_logsumexp", _naive_logsumexp, _naive_logsumexp_backward)


def _sin(xp, x):
  return xp.sin(x), (x,)


def _sin_backward(xp, residuals, g):
  (x,) = residuals
  return (g * xp.cos(x),)


SIN = cg.OpDef("t_sin", _sin, _sin_backward)


def _offset(xp, x, c):
  s = xp.sum(x * x - 3.0 * x)
  return s - c, ()  # The difference of nearly equal values.


def _offset_backward(xp, residuals, g):
  del residuals
  return (xp.zeros((300,), dtype=xp.float32) * g, xp.zeros((), dtype=xp.float32) * g)


OFFSET = cg.OpDef("t_offset", _offset, _offset_backward, gradient="declared")


def _branching(xp, x, *, threshold=0.0):
  if float(xp.sum(x * x - 3.0 * x)) > threshold:  # Sums within tolerance, either side.
    return 2.0 * x, ()
  return 3.0 * x, ()


def _branching_backward(xp, residuals, g, *, threshold=0.0):
  del residuals, threshold
  return (2.0 * g,)


BRANCHING = cg.OpDef("t_branching", _branching, _branching_backward, gradient="declared",
                     param_sets=[{"threshold": 0.0}])


def _diagnose(op, inputs, backend, mode="eager", **params):
  inputs = [np.asarray(x) for x in inputs]
  cotangents = [np.ones_like(base.load("numpy").evaluate(op, params, inputs, [None])[0][0])]
  return find_divergence(op, params, inputs, cotangents, backend=backend, dtype="float32",
                         mode=mode, device="cpu:0")


def _data_with_mean_3000():
  return (np.random.default_rng(0).normal(3000.0, 1.0, (4, 64)).astype(F32),)


def _hilbert(n=7):
  i = np.arange(n)
  return (1.0 / (i[:, None] + i[None, :] + 1)).astype(F32)


@pytest.mark.parametrize("backend,mode", [("jax", "eager"), ("tensorflow", "eager"),
                                          ("torch", "eager"), ("jax", "jit")])
def test_naive_variance_cancels_at_the_subtraction(backend, mode):
  found = _diagnose(VARIANCE, _data_with_mean_3000(), backend, mode)
  assert found.kind == Kind.CANCELLATION
  assert (found.line, found.call) == (_line("The subtraction cancels"), "a - b")
  assert found.file == __file__ and found.where().endswith(f":{found.line}")
  x = _data_with_mean_3000()[0]
  assert found.values["expected"]["shape"] == [4]
  # The reference's own (cancelled) result: NumPy's float32 variance as written.
  expected = np.mean(x * x, axis=-1) - np.mean(x, axis=-1) ** 2
  np.testing.assert_allclose(found.values["expected"]["first"][:4], expected, rtol=1e-6)
  assert found.values["cancelled"] > 1e5
  assert json.loads(json.dumps(found.to_dict()))["kind"] == "cancellation"  # JSON-able.
  if mode == "jit":
    assert "found in eager" in found.message


@pytest.mark.parametrize("backend", ["jax", "tensorflow", "torch"])
def test_hilbert_inverse_is_ill_conditioned(backend):
  found = _diagnose(INVERSE, [_hilbert()], backend)
  assert (found.kind, found.call, found.line) == (
      Kind.ILL_CONDITIONED, "xp.linalg.inv", _line("y = xp.linalg.inv(a)"))
  cond = np.linalg.cond(_hilbert().astype(np.float64))
  assert found.values["condition_number"] == pytest.approx(cond, rel=1e-6)
  assert f"{cond:.3g}" in found.message


def test_tensorflow_eigenvectors_have_the_other_sign():
  x = np.random.default_rng(0).normal(size=(16, 4)).astype(F32)
  found = _diagnose(PCA, [x], "tensorflow")
  assert (found.kind, found.call, found.line) == (
      Kind.SIGN_AMBIGUITY, "xp.linalg.eigh", _line("xp.linalg.eigh(covariance)"))
  covariance = x.T @ x / 16
  flipped = np.sum(np.linalg.eigh(covariance)[1] * _tf_eigh(covariance), axis=0) < 0
  assert found.values["flipped_vectors"] == int(flipped.sum()) > 0
  assert "largest-|.| component" in found.message
  assert _diagnose(PCA, [x], "jax") is None  # JAX's vectors have NumPy's signs here.


def _tf_eigh(a):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.linalg.eigh(a)[1].numpy()


def test_log_of_a_subnormal():
  x = np.array([1e-39, 2.0], F32)  # JAX flushes the subnormal to 0: -inf.
  found = _diagnose(LOG, [x], "jax")
  assert (found.kind, found.call, found.line) == (
      Kind.SPECIAL_VALUE, "xp.log", _line("return xp.log(x), (x,)"))
  assert found.values["nonfinite_actual"] == 1 and found.values["nonfinite_expected"] == 0
  # TensorFlow returns a finite but different logarithm there: a plain intermediate.
  found = _diagnose(LOG, [x], "tensorflow")
  assert (found.kind, found.call) == (Kind.INTERMEDIATE, "xp.log")
  assert found.values["expected"]["first"][0] == pytest.approx(float(np.log(x[0])), rel=1e-6)
  assert _diagnose(LOG, [x], "torch") is None


def test_exp_flushed_to_zero_is_a_special_value():
  x = np.array([[-95.0, -94.0, -96.5]], F32)  # exp(x): subnormal in NumPy, 0 under XLA.
  found = _diagnose(LOGSUMEXP, [x], "jax")
  assert (found.kind, found.call, found.line) == (
      Kind.SPECIAL_VALUE, "xp.exp", _line("total = xp.sum(xp.exp(x), axis=-1)"))
  assert found.values["flushed_subnormals"] == 3
  assert _diagnose(LOGSUMEXP, [x + 60.0], "jax") is None  # Normal range: no divergence.


def test_correct_op_gets_none():
  x = np.linspace(-3, 3, 12, dtype=F32)
  assert _diagnose(SIN, [x], "jax") is None
  assert _diagnose(VARIANCE, [x.reshape(3, 4)], "torch") is None  # Mean 0: no cancellation.


def test_jit_only_divergence_is_located_with_intermediates_as_outputs(tmp_path):
  """XLA fuses the product into the sum under jit and adds in another order than eagerly
  (and than NumPy); the data: the first seed where eager JAX agrees with NumPy, jit not."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  total = lambda x: jnp.sum(x * x - 3.0 * x)  # noqa: E731
  for seed in range(40):
    x = np.random.default_rng(seed).normal(3.0, 1.0, 300).astype(F32)
    c = np.sum(x * x - F32(3.0) * x)
    if float(total(x)) == c != float(jax.jit(total)(x)):
      break
  else:
    pytest.fail("no seed where jit alone departs from NumPy: pick other data")
  assert _diagnose(OFFSET, [x, c], "jax", "eager") is None
  found = _diagnose(OFFSET, [x, c], "jax", "jit")
  assert (found.kind, found.call, found.line) == (
      Kind.CANCELLATION, "a - b", _line("The difference of nearly equal values"))
  assert "eager agrees; in jit" in found.message
  assert found.values["actual"]["first"] == [
      pytest.approx(float(jax.jit(total)(x) - c))]
  path = repro.write_repro(found, str(tmp_path))
  assert "jax.jit(jax_call)" in open(path, encoding="utf-8").read()
  printed = _run_repro(path)  # The subtraction alone, in jit, on jit's own sum.
  assert (printed["numpy"], printed["jax"]) == (0.0, float(jax.jit(total)(x) - c))


def test_bisecting_compiled_prefixes_finds_the_same_call():
  """The fallback where intermediates made outputs agree: compiled prefixes, bisected."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  total = lambda x: jnp.sum(x * x - 3.0 * x)  # noqa: E731
  x = next(x for x in (np.random.default_rng(seed).normal(3.0, 1.0, 300).astype(F32)
                       for seed in range(40))
           if float(total(x)) == np.sum(x * x - F32(3.0) * x) != float(jax.jit(total)(x)))
  c = np.sum(x * x - F32(3.0) * x)
  numpy_, jax_ = base.load("numpy"), base.load("jax")
  reference = program.run(numpy_, OFFSET, {}, [x, c], [None], mode="eager", device="cpu:0")
  names = [call.name for call in reference.tape.calls]
  run = lambda how, like, stop_at=None: program.run(  # noqa: E731
      jax_, OFFSET, {}, [x, c], [None], mode="jit", device="cpu:0", how=how, like=like,
      stop_at=stop_at, n_kept=len(like))
  finals = jax_.evaluate(OFFSET, {}, [x, c], [np.zeros((), F32)], device="cpu:0", mode="jit")
  finals = list(finals[0]) + list(finals[1])
  bisect = divergence._bisect  # pylint: disable=protected-access
  # x*x - 3*x, its sum, then s - c: the sum's order makes s - c differ.
  assert names[:5] == ["*", "*", "-", "sum", "-"]
  assert bisect(run, reference, 1e-5, finals) == (4, 0)
  assert bisect(run, reference, 1e-5, reference.finals) is None  # Nothing to bisect.


def test_runs_that_branch_apart_on_agreeing_values_are_reported_where_they_part():
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  for seed in range(40):
    x = np.random.default_rng(seed).normal(3.0, 1.0, 300).astype(F32)
    ours, theirs = float(np.sum(x * x - F32(3.0) * x)), float(jnp.sum(x * x - 3.0 * x))
    if ours != theirs:
      break
  found = _diagnose(BRANCHING, [x], "jax", threshold=(ours + theirs) / 2)
  assert (found.kind, found.line, found.call) == (
      Kind.UNKNOWN, _line("Sums within tolerance, either side"), "xp.sum")
  assert "make different xp calls" in found.message
  assert _diagnose(BRANCHING, [x], "jax", threshold=min(ours, theirs) - 1.0) is None


def test_error_map_is_the_worst_results():
  expected = [np.ones((100, 3), F32), np.ones(5, F32), np.arange(3)]
  actual = [e.copy() for e in expected]
  actual[0][70, 1] = 3.0
  actual[1][2] = 1.5
  actual[2][0] = 7  # Integers are not mapped.
  m = classify.worst_error_map(actual, expected)
  assert (len(m), len(m[0])) == (64, 3)  # 100 rows pooled into 64.
  row = np.searchsorted(np.linspace(0, 100, 65).astype(int), 70, side="right") - 1
  assert m[row][1] == 2.0 and sum(map(sum, m)) == 2.0
  assert classify.worst_error_map([np.full((2, 2), np.nan)], [np.ones((2, 2))]) == [[1.0] * 2] * 2
  assert classify.worst_error_map([np.ones(2)], [np.ones(3)]) == []


def _run_repro(path):
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  done = subprocess.run([sys.executable, path], capture_output=True, text=True, check=True,
                        cwd="/", env=env, timeout=300)
  lines = [line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line]
  return {k: json.loads(v) for k, v in lines}


@pytest.mark.parametrize("backend", ["torch"])  # TensorFlow's import: 15 s more.
def test_repro_runs_the_diverging_call_alone(tmp_path, backend):
  found = _diagnose(INVERSE, [_hilbert()], backend)
  path = repro.write_repro(found, str(tmp_path))
  text = open(path, encoding="utf-8").read()
  assert "import crossgrad" not in text and "from crossgrad" not in text
  printed = _run_repro(path)
  np.testing.assert_array_equal(printed["numpy"], np.linalg.inv(_hilbert()))
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    want = tf.linalg.inv(_hilbert()).numpy()
  else:
    import torch  # pylint: disable=g-import-not-at-top
    want = torch.linalg.inv(torch.from_numpy(_hilbert())).numpy()
  np.testing.assert_array_equal(printed[backend], want)
  assert not np.allclose(printed[backend], printed["numpy"], rtol=1e-5)


def test_repro_of_a_cancellation_runs_each_on_its_own_inputs(tmp_path):
  found = _diagnose(VARIANCE, _data_with_mean_3000(), "jax")
  path = repro.write_repro(found, str(tmp_path), name="variance")
  assert path.endswith("variance.py")
  printed = _run_repro(path)
  x = _data_with_mean_3000()[0]
  a, b = np.mean(x * x, axis=-1), np.mean(x, axis=-1) ** 2
  np.testing.assert_array_equal(printed["numpy"], a - b)
  assert printed["jax"] == found.values["actual"]["first"][:4]
  assert repro.write_repro(dataclasses.replace(found, values={}), str(tmp_path)) is None
  # One script per cause, from rows carrying the record or its JSON form.
  rows = [types.SimpleNamespace(diagnosis=found), types.SimpleNamespace(diagnosis=None),
          types.SimpleNamespace(diagnosis=found.to_dict()), types.SimpleNamespace()]
  assert repro.write_for_rows(rows, str(tmp_path / "all")) == [
      str(tmp_path / "all" / f"{os.path.basename(__file__)[:-3]}_py_{found.line}_jax.py")]
