"""Special-value rows: inputs, every built-in op, and the differences they catch or declare."""

import dataclasses

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends import base
from crossgrad.checker import special_values
from crossgrad.registry.ops import BUILTIN

F32 = np.float32


def _leaky(xp, x):
  return xp.where(x > 0, x, 0.2 * x), (x,)


def _leaky_backward(xp, residuals, g):
  (x,) = residuals
  return (xp.where(x > 0, g, 0.2 * g),)


def _sample(rng):
  return (rng.standard_normal((6, 8)),)


def test_values_are_the_generic_ones_then_edges_with_neighbours():
  op = cg.OpDef("t_edges", _leaky, _leaky_backward, edge_samples=lambda: (0.5, 0.0))
  got = special_values.values(op, {}, "float32")
  info = np.finfo(F32)
  half = F32(0.5)
  want = [np.nan, np.inf, -np.inf, -0.0, 0.0, info.max, -info.max, info.tiny, -info.tiny,
          half, np.nextafter(half, F32(-1)), np.nextafter(half, F32(1)),
          -np.nextafter(F32(0), F32(1)), np.nextafter(F32(0), F32(1))]  # 0 and -0 are there.
  assert got.dtype == F32
  np.testing.assert_array_equal(got, np.array(want, F32))
  assert [np.signbit(v) for v in got[3:5]] == [True, False]


def test_special_inputs_align_then_cross_and_keep_integers():
  op = cg.OpDef("t_pair", lambda xp, a, b, i: (a + b, ()), lambda xp, r, g: (g, g, None),
                nondiff=("i",))
  n = len(special_values.values(op, {}, "float64"))
  a, b, i = np.ones(2 * n + 3), np.full(4, 7.0), np.arange(5, dtype=np.int32)
  sa, sb, si = special_values.special_inputs(op, {}, [a, b, i], "float64")
  specials = special_values.values(op, {}, "float64")
  np.testing.assert_array_equal(sa[:n], specials)  # Aligned block.
  np.testing.assert_array_equal(sa[n:2 * n], np.roll(specials, -1))  # Crossed block.
  np.testing.assert_array_equal(sa[2 * n:], [1.0, 1.0, 1.0])  # The sample stays.
  np.testing.assert_array_equal(sb, specials[:4])  # A small input takes the first ones.
  np.testing.assert_array_equal(si, i)
  assert a[0] == 1.0  # The sample itself is not modified.


def _special_rows(report):
  return [r for r in report.rows if r.check == "special"]


@pytest.fixture(scope="module")
def builtin_report():
  return cg.cross_check(BUILTIN, backends=["tensorflow", "jax"], dtypes=["float32", "float64"],
                        modes=["eager", "jit"])  # Torch's special rows: tests/test_torch_*.


def test_every_builtin_op_passes_its_special_rows(builtin_report):
  rows = _special_rows(builtin_report)
  assert {r.op for r in rows} == {op.name for op in BUILTIN}
  bad = [r for r in rows if not r.ok]
  assert not bad, "\n".join(map(str, bad))
  per_op = {op.name: len(op.param_sets) * 2 * 4 for op in BUILTIN}  # dtypes x (backend, mode)
  assert {name: sum(r.op == name for r in rows) for name in per_op} == per_op


def test_framework_differences_are_named_in_the_rows(builtin_report):
  notes = {(r.op, r.backend): r.note for r in _special_rows(builtin_report)
           if r.dtype == "float32" and r.mode == "jit"}
  for backend in ("tensorflow", "jax"):
    assert notes[("custom_add", backend)].startswith("subnormals flushed to zero (FTZ/DAZ)")
    for op in ("leaky_relu", "positive_matmul"):
      assert notes[(op, backend)].startswith(
          "declared difference: subnormal inputs read as zero (DAZ)"), (op, notes[(op, backend)])


def test_undeclared_daz_difference_fails():
  leaky = cg.get("leaky_relu")
  undeclared = dataclasses.replace(leaky, name="t_leaky_undeclared", special_differences={})
  report = cg.cross_check([undeclared], backends=["jax"], dtypes=["float32"], modes=["jit"])
  (row, _) = _special_rows(report)  # Two parameter sets.
  assert not row.ok and row.note.startswith("worst: dx[")


def test_nan_handling_that_only_special_values_reach_is_caught():
  def backward(xp, residuals, g):  # NaN > 0 and NaN <= 0 are both False: NaNs get g in JAX.
    (x,) = residuals
    if xp.backend == "jax":
      return (xp.where(x <= 0, 0.2 * g, g),)
    return _leaky_backward(xp, residuals, g)

  op = cg.OpDef("t_nan_branch", _leaky, backward, sample=_sample)
  report = cg.cross_check([op], dtypes=["float32"], modes=["eager"])
  assert {(r.backend, r.check) for r in report.failures} == {("jax", "special")}
  (failure,) = report.failures
  (x,) = special_values.special_inputs(op, {}, [np.zeros((6, 8))], "float32")
  nan_at = {f"worst: dx[{i}, {j}]: " for i, j in np.argwhere(np.isnan(x))}
  assert len(nan_at) == 2 and failure.note[:len("worst: dx[0, 0]: ")] in nan_at


def test_signed_zero_difference_fails_unless_declared():
  sign = cg.OpDef("t_sign", lambda xp, x: (xp.sign(x), ()),
                  lambda xp, r, g: (xp.zeros_like(g),), gradient="declared", sample=_sample)
  report = cg.cross_check([sign], backends=["jax"], dtypes=["float32"], modes=["eager"])
  (row,) = _special_rows(report)
  assert not row.ok and row.note == "worst: output 0[0, 3]: -0.0 vs reference 0.0"
  declared = dataclasses.replace(
      sign, name="t_sign_declared",
      special_differences={"signed_zero": "jnp.sign keeps the sign of -0.0"})
  report = cg.cross_check([declared], backends=["jax"], dtypes=["float32"], modes=["eager"])
  (row,) = _special_rows(report)
  assert row.ok and "declared difference: the sign of a zero result differs" in row.note
  assert "(jnp.sign keeps the sign of -0.0)" in row.note


def test_a_reference_that_fails_on_special_values_is_a_failing_row():
  def forward(xp, x):
    if np.isnan(np.asarray(x)).any():
      raise ValueError("no NaN please")
    return x * 2.0, ()

  op = cg.OpDef("t_no_nan", forward, lambda xp, r, g: (2.0 * g,), sample=_sample)
  report = cg.cross_check([op], backends=["jax"], dtypes=["float64"], modes=["eager"])
  (row,) = _special_rows(report)
  assert not row.ok and row.backend == "numpy"
  assert row.note == "reference on special values: ValueError: no NaN please"


def test_special_rows_can_be_turned_off():
  report = cg.cross_check(["leaky_relu"], backends=["jax"], modes=["jit"], special=False)
  assert not _special_rows(report) and report.ok


def test_jit_runner_is_reused_for_special_values():
  """The special evaluation has the sampled inputs' shapes, so it compiles nothing new."""
  jax_backend = base.load("jax")
  op = cg.get("leaky_relu")
  inputs = [np.ones((5, 7), F32)]
  jax_backend.evaluate(op, op.resolve_params({}), inputs, [np.ones((5, 7), F32)], mode="jit")
  fn = jax_backend.get(op)
  runner = base._COMPILED[(fn, "jit", "cpu:0")]  # pylint: disable=protected-access
  size = runner._cache_size()  # pylint: disable=protected-access
  jax_backend.evaluate(op, op.resolve_params({}), [np.full((5, 7), np.nan, F32)],
                       [np.ones((5, 7), F32)], mode="jit")
  assert runner._cache_size() == size  # pylint: disable=protected-access
