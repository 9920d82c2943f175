"""``variant`` rows: mistakes that are right on the op's one sample and wrong on inputs the
forward accepts (broadcasting, size-1 and extra axes, a batch of 1, values beyond the
sample's range) are green without them and caught with them, each diagnosed naming the
input and the variant; the correct version of each op gets no failing variant row."""

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.checker import variants
from crossgrad.checker.diagnosis import causes
from crossgrad.registry.ops import BUILTIN


def _unbroadcast_leading(xp, g, like):
  """A hand-written unbroadcast that sums only the leading axes ``like`` lacks."""
  return xp.sum(g, axis=tuple(range(g.ndim - like.ndim))) if g.ndim > like.ndim else g


def _scale_forward(xp, x, gamma):
  return x * gamma, (x, gamma)


def _bias_forward(xp, x, bias):
  y = xp.tanh(x + bias)
  return y, (y, x, bias)


def _dot_forward(xp, x, w):
  return xp.sum(x * w, axis=-1, keepdims=True), (x, w)


def _log_softmax_forward(xp, x):
  shifted = x - xp.max(x, axis=-1, keepdims=True)
  y = shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
  return y, (y,)


def _mean_forward(xp, x):
  return xp.mean(x), (x,)


def _softplus_forward(xp, x):
  return xp.where(x > 20, x, xp.log1p(xp.exp(xp.minimum(x, 20.0)))), (x,)


def _hard_swish_forward(xp, x):
  return x * xp.clip(x + 3, 0.0, 6.0) / 6, (x,)


def _sigmoid(xp, x):
  return 1 / (1 + xp.exp(-x))


# name: (forward, correct backward, planted backward, sample, the input and variant the
# diagnosis names, its kind).
CASES = {
    "layer_scale": (
        _scale_forward,
        lambda xp, r, g: (xp.unbroadcast(g * r[1], r[0]), xp.unbroadcast(g * r[0], r[1])),
        lambda xp, r, g: (xp.unbroadcast(g * r[1], r[0]), g * r[0]),  # gamma's unreduced.
        lambda rng: (rng.standard_normal((4, 3)), rng.standard_normal((4, 3))),
        "gamma", "gamma: (4, 3) -> (1, 3)", "shape"),
    "bias_tanh": (
        _bias_forward,
        lambda xp, r, g: (xp.unbroadcast(g * (1 - r[0] ** 2), r[1]),
                          xp.unbroadcast(g * (1 - r[0] ** 2), r[2])),
        lambda xp, r, g: (xp.unbroadcast(g * (1 - r[0] ** 2), r[1]),
                          _unbroadcast_leading(xp, g * (1 - r[0] ** 2), r[2])),
        lambda rng: (rng.standard_normal((4, 3)), rng.standard_normal(3)),
        "bias", "bias: (3,) -> (1, 3)", "shape"),
    "dot_squeeze": (
        _dot_forward,
        lambda xp, r, g: _dot_backward(xp, r, g),
        lambda xp, r, g: _squeezed_dot_backward(xp, r, g),
        lambda rng: (rng.standard_normal((4, 3)), rng.standard_normal(3)),
        "x", "batch of 1 (of 4)", "shape"),
    "log_softmax": (
        _log_softmax_forward,
        lambda xp, r, g: (g - xp.exp(r[0]) * xp.sum(g, axis=-1, keepdims=True),),
        lambda xp, r, g: (g - xp.exp(r[0]) * xp.sum(g, axis=1, keepdims=True),),
        lambda rng: (rng.standard_normal((4, 5)),),
        "x", "x: (4, 5) -> (2, 4, 5)", None),
    "mean": (
        _mean_forward,
        lambda xp, r, g: (g * xp.ones_like(r[0]) / r[0].size,),
        lambda xp, r, g: (g * xp.ones_like(r[0]) / r[0].shape[0],),
        lambda rng: (rng.standard_normal(6),),
        "x", "x: (6,) -> (1, 6)", "scale"),
    "softplus": (
        _softplus_forward,
        lambda xp, r, g: (xp.where(r[0] > 20, g, g * _sigmoid(xp, r[0])),),
        lambda xp, r, g: (xp.where(r[0] > 4, g, g * _sigmoid(xp, r[0])),),
        lambda rng: (rng.standard_normal((4, 6)),),
        "x", "values x10", "elements"),
    "hard_swish": (
        _hard_swish_forward,
        lambda xp, r, g: (g * xp.where(r[0] > 3, 1.0, xp.where(r[0] < -3, 0.0,
                                                               (2 * r[0] + 3) / 6)),),
        lambda xp, r, g: (g * xp.where(r[0] > 3, 0.0, xp.where(r[0] < -3, 0.0,
                                                               (2 * r[0] + 3) / 6)),),
        lambda rng: (rng.standard_normal((4, 6)),),
        "x", "values x10", "elements"),
}


def _dot_backward(xp, residuals, g):
  x, w = residuals  # Either may be broadcast along the summed axis.
  (gw, _), (gx, _) = xp.broadcast_arrays(g * w, x), xp.broadcast_arrays(g * x, w)
  return xp.unbroadcast(gw, x), xp.unbroadcast(gx, w)


def _squeezed_dot_backward(xp, residuals, g):
  """Ported from torch's ``g.squeeze()``: every axis of size 1 goes, the batch's too."""
  x, w = residuals
  squeezed = xp.reshape(g, tuple(d for d in g.shape if d != 1))
  gx, _ = xp.broadcast_arrays(g * x, w)
  return squeezed[..., None] * w, xp.unbroadcast(gx, w)


def _ops(planted: bool) -> list[cg.OpDef]:
  return [cg.OpDef(f"t_variants_{name}{'_planted' if planted else ''}", forward,
                   wrong if planted else right, sample=sample)
          for name, (forward, right, wrong, sample, *_) in CASES.items()]


def _check(ops):
  report = cg.cross_check(ops, backends=["jax"], dtypes=["float64"], modes=["eager", "jit"],
                          special=False)
  return causes.diagnose(report, ops)


@pytest.fixture(scope="module")
def planted():
  return _check(_ops(planted=True))


def test_planted_mistakes_pass_on_the_sample(planted):
  """Today's rows (all but the variants') are green: each mistake is right on the sample."""
  assert all(r.ok for r in planted.rows if r.check != "variant"), planted.table(True)
  assert {r.op for r in planted.failures} == {op.name for op in _ops(planted=True)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_variant_rows_catch_and_name_the_input_and_variant(planted, name):
  *_, input_name, variant, kind = CASES[name]
  failing = [r for r in planted.failures if r.op == f"t_variants_{name}_planted"]
  assert failing and all(r.check == "variant" and r.variant for r in failing)
  (row,) = [r for r in failing if r.variant == variant and r.backend == "numpy"]
  d = row.diagnosis
  assert d.input == input_name and d.values["variant"] == variant
  assert f"on the variant {variant}" in d.message and input_name in d.message
  if kind is not None:
    assert d.kind == kind, d
  if kind == "shape":  # The line of the backward that returns the cotangent.
    assert d.file.endswith("test_variants.py") and d.line
  assert all(r.diagnosis.values.get("variant") == r.variant for r in failing)


def test_a_shape_diagnosis_says_to_sum_over_the_broadcast_axes(planted):
  (row,) = [r for r in planted.failures if r.op == "t_variants_bias_tanh_planted"
            and r.variant == "bias: (3,) -> (1, 3)"]
  assert row.diagnosis.message == (
      "on the variant bias: (3,) -> (1, 3): the cotangent of bias has shape (4, 3), the "
      "input (1, 3): sum it over the broadcast axes (xp.unbroadcast(ct, bias))")


def test_the_correct_ops_get_no_failing_variant_row():
  report = _check(_ops(planted=False))
  assert report.ok, report.table(True)
  checked = {r.op for r in report.rows if r.check == "variant" and r.backend == "jax"}
  assert checked == {op.name for op in _ops(planted=False)}


def test_variants_off_and_a_bad_policy():
  (op,) = _ops(planted=True)[:1]
  report = cg.cross_check([op], backends=[], variants="none")
  assert report.ok and not [r for r in report.rows if r.check == "variant"]
  with pytest.raises(cg.CrossgradError, match="unknown variants policy"):
    cg.cross_check([op], backends=[], variants="some")


def test_variants_the_op_rejects_are_skipped_not_failed():
  """positive_matmul takes rank-2 inputs only (its check_inputs): those variants are named
  in one skipped row; the others pass."""
  report = cg.cross_check(["positive_matmul"], backends=[])
  assert report.ok
  (skipped,) = [r for r in report.rows if r.check == "skipped"]
  assert "x: (6, 5) -> (5,) (CrossgradError)" in skipped.note
  assert {r.variant for r in report.rows if r.check == "variant"} >= {"values x10"}


def test_derived_variants_are_named_by_what_they_change():
  op = cg.OpDef("t_variants_names", _bias_forward, CASES["bias_tanh"][1])
  names = [v.name for v in variants.derive(op, [np.zeros((4, 3)), np.zeros(3)])]
  assert names == [
      "batch of 1 (of 4)", "batch of 0 (of 4)", "x: (4, 3) -> (4, 1)", "x: (4, 3) -> (3,)", "x: (4, 3) -> (4,)",
      "x: (4, 3) -> (1, 4, 3)", "x: (4, 3) -> (2, 4, 3)", "bias: (3,) -> (1,)",
      "bias: (3,) -> ()", "bias: (3,) -> (1, 3)", "bias: (3,) -> (2, 3)",
      "all inputs: extra leading axis of 1", "all inputs: extra leading axis of 2",
      "values x10", "values x100"]  # x: (4, 3) -> (1, 3) is the batch of 1, named once.
  log_softmax = cg.OpDef("t_variants_one", _log_softmax_forward, CASES["log_softmax"][1])
  assert [v.name for v in variants.derive(log_softmax, [np.zeros((4, 5))])] == [
      "batch of 1 (of 4)", "batch of 0 (of 4)", "x: (4, 5) -> (1, 4, 5)", "x: (4, 5) -> (2, 4, 5)", "values x10",
      "values x100"]  # One input: no other it could broadcast against.


@pytest.mark.parametrize("seed", [1, 2])
def test_builtin_ops_pass_their_variants_across_seeds(seed):
  report = cg.cross_check(list(BUILTIN), backends=[], seed=seed)
  failing = [r for r in report.failures if r.check != "declared"]
  assert not failing, report.table(rows=failing)


def test_a_variant_that_ties_a_maximum_is_skipped_not_failed():
  """max(x) over every element: two copies of the sample (a leading axis of 2) tie the
  maximum, where the forward has no derivative for finite differences to check."""
  def backward(xp, r, g):
    x, top = r
    first = xp.cumulative_sum(xp.astype(xp.reshape(x, (-1,)) == top, x.dtype)) == 1
    picked = xp.reshape(first & (xp.reshape(x, (-1,)) == top), x.shape)
    return (xp.where(picked, g, 0.0 * g),)

  op = cg.OpDef("t_variants_max", lambda xp, x: (xp.max(x), (x, xp.max(x))), backward,
                sample=lambda rng: (rng.standard_normal((3, 4)),))
  report = cg.cross_check([op], backends=[])
  assert report.ok, report.table(True)
  (skipped,) = [r for r in report.rows if r.check == "skipped"]
  assert "x: (3, 4) -> (2, 3, 4) (a kink or tie there)" in skipped.note
  assert "values x10" in {r.variant for r in report.rows if r.check == "variant"}


def _two_outputs(xp, x):
  return (xp.sin(x), xp.cos(x)), (x,)


def test_zero_cotangents_give_the_reference_s_finite_cotangents():
  """Cotangents exactly 0 at some elements, and one output's all zeros (what frameworks
  pass for an unused output), in each backend: the reference's cotangents, finite."""
  def backward(xp, r, g):
    (x,), (g0, g1) = r, g
    return (g0 * xp.cos(x) - g1 * xp.sin(x),)

  op = cg.OpDef("t_variants_zero_g", _two_outputs, backward,
                sample=lambda rng: (rng.standard_normal((3, 4)),))
  report = cg.cross_check([op], backends=["jax"], dtypes=["float64"], modes=["eager"],
                          special=False)
  assert report.ok, report.table(True)
  zeros = {r.variant for r in report.rows if r.check == "variant" and r.backend == "jax"
           and "cotangent" in r.variant}
  assert zeros == {"cotangent 0 at every other element", "output 0's cotangent all zeros",
                   "output 1's cotangent all zeros"}


def test_all_runs_every_variant_in_the_backends():
  op = _ops(planted=False)[1]  # tanh(x + bias)
  report = cg.cross_check([op], backends=["jax"], dtypes=["float64"], modes=["eager"],
                          special=False, variants="all")
  assert report.ok, report.table(True)
  rows = [r for r in report.rows if r.check == "variant"]
  checked = {r.variant for r in rows if r.backend == "numpy"}
  assert len(checked) > 5
  assert {r.variant for r in rows if r.backend == "jax"} == checked | {
      "cotangent 0 at every other element"}


def _softmax_rows(xp, z, label):
  """Cross-entropy of rank-2 logits, written with axis=1: its axes read by position."""
  top = xp.max(z, axis=1, keepdims=True)
  e = xp.exp(z - top)
  total = xp.sum(e, axis=1, keepdims=True)
  picked = xp.take_along_axis(z, xp.expand_dims(label, 1), axis=1)
  return (top + xp.log(total) - picked)[:, 0], (e / total, label)


def _softmax_rows_backward(xp, r, g):
  p, label = r
  onehot = xp.astype(xp.expand_dims(label, 1) == xp.arange(p.shape[1], dtype=label.dtype),
                     p.dtype)
  return xp.expand_dims(g, 1) * (p - onehot), None


def test_a_leading_axis_the_op_does_not_act_on_is_skipped_not_failed():
  """A rank-2 op reading axis 1 takes square inputs with a leading axis (the forward does not
  raise) but computes another function there: its outputs are not the sample's repeated. A
  matrix product's backward need not unbroadcast one operand's batch: a leading axis on one
  of two inputs must broadcast (the outputs keep their shapes); on both, it is a batch."""
  rows = cg.OpDef("t_variants_axis_one", _softmax_rows, _softmax_rows_backward,
                  nondiff=("label",), sample=lambda rng: (rng.standard_normal((4, 4)),
                                                          rng.integers(0, 4, 4)))
  matmul = cg.OpDef("t_variants_matmul", lambda xp, x, w: (x @ w, (x, w)),
                    lambda xp, r, g: (g @ xp.matrix_transpose(r[1]),
                                      xp.matrix_transpose(r[0]) @ g),
                    sample=lambda rng: (rng.standard_normal((2, 3)),
                                        rng.standard_normal((3, 4))))
  report = cg.cross_check([rows, matmul], backends=[])
  assert report.ok, report.table(True)
  skipped = {r.op: r.note for r in report.rows if r.check == "skipped"}
  assert ("all inputs: extra leading axis of 2 (not the sample's outputs repeated)"
          in skipped["t_variants_axis_one"])
  assert "x: (2, 3) -> (2, 2, 3) (does not broadcast)" in skipped["t_variants_matmul"]
  taken = {r.variant for r in report.rows if r.check == "variant" and r.op == matmul.name}
  assert "all inputs: extra leading axis of 2" in taken
  # Not vacuous: there the backward is not the derivative of what the forward computes.
  (variant,) = [v for v in variants.derive(rows, list(rows.sample(np.random.default_rng(0))))
                if v.name == "all inputs: extra leading axis of 2"]
  z, label = variant.inputs
  out, vjp_fn = cg.numpy.vjp(rows, z, label)
  rng = np.random.default_rng(1)
  g, step = rng.standard_normal(out.shape), rng.standard_normal(z.shape)
  loss = lambda zz: float(np.sum(cg.numpy.vjp(rows, zz, label)[0] * g))
  numeric = (loss(z + 1e-6 * step) - loss(z - 1e-6 * step)) / 2e-6
  assert abs(numeric - float(np.sum(vjp_fn(g)[0] * step))) > 1e-3 * abs(numeric)


def _flatten(xp, x):
  return xp.reshape(x, (x.shape[0], x.shape[1] * x.shape[2])), (x,)


def test_a_batch_of_zero_catches_a_reshape_that_infers_an_axis():
  """``reshape(g, (n, -1, c))`` cannot infer the axis of a batch of 0; ``x.shape`` can."""
  sample = lambda rng: (rng.standard_normal((4, 2, 3)),)
  inferred = cg.OpDef("t_flatten_inferred", _flatten,
                      lambda xp, r, g: (xp.reshape(g, (g.shape[0], -1, r[0].shape[2])),),
                      sample=sample)
  assert cg.cross_check([inferred], backends=[], variants="none").ok
  report = causes.diagnose(cg.cross_check([inferred], backends=[]), [inferred])
  (row,) = report.failures
  assert (row.variant, row.diagnosis.kind) == ("batch of 0 (of 4)", "raised")
  assert "cannot reshape" in row.diagnosis.message
  exact = cg.OpDef("t_flatten_exact", _flatten, lambda xp, r, g: (xp.reshape(g, r[0].shape),),
                   sample=sample)
  report = cg.cross_check([exact], backends=[])
  assert report.ok and "batch of 0 (of 4)" in {r.variant for r in report.rows}


def _smooth_l1(xp, x, *, beta=1.0):
  a = xp.abs(x)
  return xp.where(a < beta, 0.5 * x * x / beta, a - 0.5 * beta), (x,)


def test_a_float_parameter_doubled_catches_a_slope_right_only_for_its_declared_value():
  """A smooth-L1 whose backward drops ``/ beta``: right for the declared beta=1 only."""
  sample = lambda rng: (rng.standard_normal(12),)
  fixed_slope = cg.OpDef(
      "t_smooth_l1_fixed_slope", _smooth_l1,
      lambda xp, r, g, *, beta=1.0: (g * xp.clip(r[0], -1.0, 1.0),), sample=sample,
      param_sets=[{"beta": 1.0}])
  assert cg.cross_check([fixed_slope], backends=[], variants="none").ok
  report = causes.diagnose(cg.cross_check([fixed_slope], backends=[]), [fixed_slope])
  (row,) = report.failures
  assert row.variant == "beta: 1.0 -> 2.0" and row.diagnosis.input == "x"
  assert row.variant in row.diagnosis.message
  exact = cg.OpDef("t_smooth_l1", _smooth_l1,
                   lambda xp, r, g, *, beta=1.0: (g * xp.clip(r[0] / beta, -1.0, 1.0),),
                   sample=sample, param_sets=[{"beta": 1.0}])
  report = cg.cross_check([exact], backends=[])
  assert report.ok and "beta: 1.0 -> 2.0" in {r.variant for r in report.rows}
