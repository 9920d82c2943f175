"""Special-value rows: inputs, every built-in op, and the differences they catch or declare."""

import dataclasses

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.checker import special_values
from crossgrad.registry import validation
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
  got = special_values.values(op, {}, np.dtype(np.float32))
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
  n = len(special_values.values(op, {}, np.dtype(np.float64)))
  a, b, i = np.ones(2 * n + 3), np.full(4, 7.0), np.arange(5, dtype=np.int32)
  sa, sb, si = special_values.special_inputs(op, {}, [a, b, i], np.dtype(np.float64))
  specials = special_values.values(op, {}, np.dtype(np.float64))
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
  """A subnormal input is an op edge (0's neighbour), not an extreme: no advisory."""
  leaky = cg.get("leaky_relu")
  undeclared = dataclasses.replace(leaky, name="t_leaky_undeclared", special_differences={})
  report = cg.cross_check([undeclared], backends=["jax"], dtypes=["float32"], modes=["jit"])
  (row, _) = _special_rows(report)  # Two parameter sets.
  assert not row.ok and not row.advisory
  assert row.note.startswith("not at special values: worst: dx[")


def _nan_branch_op():
  def backward(xp, residuals, g):  # NaN > 0 and NaN <= 0 are both False: NaNs get g in JAX.
    (x,) = residuals
    if xp.backend == "jax":
      return (xp.where(x <= 0, 0.2 * g, g),)
    return _leaky_backward(xp, residuals, g)

  return cg.OpDef("t_nan_branch", _leaky, backward, sample=_sample)


def test_a_difference_at_a_nan_input_is_advisory_by_default_and_fails_when_strict():
  op = _nan_branch_op()
  report = cg.cross_check([op], dtypes=["float32"], modes=["eager"])
  assert report.ok and not report.failures
  (advisory,) = report.advisories
  assert (advisory.backend, advisory.check, advisory.status) == ("jax", "special", "ADVISORY")
  assert advisory.advisory == "finite value"
  assert advisory.note.startswith("advisory: differs only at special values; worst: dx[")
  assert "1 advisory at special values (finite value: 1)" in report.summary()
  strict = cg.cross_check([op], dtypes=["float32"], modes=["eager"], special="strict")
  assert {(r.backend, r.check) for r in strict.failures} == {("jax", "special")}
  (failure,) = strict.failures
  (x,) = special_values.special_inputs(op, {}, [np.zeros((6, 8))], np.dtype(np.float32))
  nan_at = {f"worst: dx[{i}, {j}]: " for i, j in np.argwhere(np.isnan(x))}
  assert len(nan_at) == 2 and failure.note[:len("worst: dx[0, 0]: ")] in nan_at


def test_a_wrong_value_at_zero_or_an_edge_fails_even_next_to_special_ones():
  """A finite reference at an ordinary input (0, the op's edge) is not special: a NaN or a
  wrong number there fails, also when the same row differs at NaN inputs."""
  def backward(xp, residuals, g):
    (x,) = residuals
    right = _leaky_backward(xp, residuals, g)[0]
    if xp.backend == "jax":  # NaN at x == 0 and x == 0.5; also differs at x == NaN.
      wrong = xp.where((x == 0) | (x == 0.5), xp.nan, right)
      return (xp.where(x != x, 7.0 * g, wrong),)
    return (right,)

  op = cg.OpDef("t_nan_at_zero", _leaky, backward, sample=_sample,
                edge_samples=lambda: (0.5,))
  report = cg.cross_check([op], backends=["jax"], dtypes=["float32"], modes=["eager"])
  (row,) = _special_rows(report)
  assert not row.ok and not row.advisory
  assert row.note.startswith("not at special values: worst: dx[") and "nan vs" in row.note


def test_special_elements_follow_dependence_on_special_inputs():
  """Row sums: a row is special if it holds a non-finite or extreme input; the others not."""
  op = cg.OpDef("t_rowsum", lambda xp, x: (xp.sum(x, axis=1), (x,)),
                lambda xp, r, g: (xp.broadcast_to(g[:, None], r[0].shape),),
                sample=lambda rng: (rng.standard_normal((40, 3)),))
  reference = base.load("numpy")
  (sampled,) = op.sample(np.random.default_rng(0))
  case = special_values.prepare(op, {}, [sampled], np.dtype(np.float64), reference, 0)
  (x,) = case.inputs
  info = np.finfo(np.float64)
  extreme = (~np.isfinite(x) | (np.abs(x) == info.max) | (np.abs(x) == info.tiny)).any(1)
  assert extreme.any() and not extreme.all()
  np.testing.assert_array_equal(case.special[0], extreme)  # Output: the row sums.
  np.testing.assert_array_equal(case.special[1], np.zeros(x.shape, bool))  # dx = g: finite.


def test_signed_zeros_are_equal_except_bit_for_bit():
  sign = cg.OpDef("t_sign", lambda xp, x: (xp.sign(x), ()),
                  lambda xp, r, g: (xp.zeros_like(g),), gradient="declared", sample=_sample)
  report = cg.cross_check([sign], backends=["jax"], dtypes=["float32"], modes=["eager"])
  (row,) = _special_rows(report)
  assert row.ok and not row.advisory and row.error == 0.0 and row.ulps == 0.0
  report = cg.cross_check([sign], backends=["jax"], dtypes=["float32"], modes=["eager"],
                          tolerance="bitwise", special="strict")
  (row,) = _special_rows(report)
  assert not row.ok and row.note == "output 0[0, 3]: -0.0 vs reference 0.0 (0 ulps)"


def test_a_reference_that_fails_on_special_values_is_advisory_or_strictly_failing():
  def forward(xp, x):
    if np.isnan(np.asarray(x)).any():
      raise ValueError("no NaN please")
    return x * 2.0, ()

  op = cg.OpDef("t_no_nan", forward, lambda xp, r, g: (2.0 * g,), sample=_sample)
  report = cg.cross_check([op], backends=["jax"], dtypes=["float64"], modes=["eager"])
  (row,) = _special_rows(report)
  assert row.ok and row.backend == "numpy" and row.advisory == "reference raises"
  assert row.note == "advisory: reference on special values: ValueError: no NaN please"
  report = cg.cross_check([op], backends=["jax"], dtypes=["float64"], modes=["eager"],
                          special="strict")
  (row,) = _special_rows(report)
  assert not row.ok and row.note == "reference on special values: ValueError: no NaN please"


def test_a_backend_raising_on_special_values_is_advisory_or_strictly_failing():
  def forward(xp, x):
    values = validation.concrete_values(x)  # None while traced (jvp rows): no values.
    finite = values is None or np.isfinite(values).all()
    if xp.backend == "jax" and not finite:
      raise FloatingPointError("refuses infinities")
    return x * 2.0, ()

  op = cg.OpDef("t_raises", forward, lambda xp, r, g: (2.0 * g,), sample=_sample)
  report = cg.cross_check([op], backends=["jax"], dtypes=["float64"], modes=["eager"])
  (row,) = _special_rows(report)
  assert row.ok and row.advisory == "raises" and row.status == "ADVISORY"
  assert row.note == "advisory: raises on special inputs: FloatingPointError: refuses infinities"
  strict = cg.cross_check([op], backends=["jax"], dtypes=["float64"], modes=["eager"],
                          special="strict")
  assert [r.check for r in strict.failures] == ["special"]


def test_an_unknown_policy_is_a_clear_error():
  with pytest.raises(cg.CrossgradError, match="unknown special-values policy"):
    cg.cross_check(["leaky_relu"], backends=["jax"], special="lenient")


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
