"""The torch backend in the cross-check's higher-order rows: forward mode (jvp), second
order (double backward) and vmap pass for every built-in op, and fail where the backward
is wrong. Expected values are the checker's finite differences and the NumPy reference."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (crossgrad[torch])")

import crossgrad as cg  # pylint: disable=g-import-not-at-top,wrong-import-position
from crossgrad.backends.common import base, protocol  # pylint: disable=wrong-import-position
from crossgrad.registry.ops import BUILTIN  # pylint: disable=wrong-import-position


BACKEND = base.load("torch")


def _sample(rng):
  return (rng.standard_normal((3, 4)),)


def _rows(report):
  return [r for r in report.rows if r.backend == "torch"]


def test_torch_has_the_higher_order_members():
  assert isinstance(BACKEND, protocol.HigherOrder)
  assert BACKEND.TRANSFORMS == ("vmap", "batched_vjp")
  assert set(BACKEND.UNSUPPORTED_CHECKS) == {("jvp", "compile"), ("second_order", "compile")}
  op = cg.get("leaky_relu")
  x = np.ones((2, 3))
  with pytest.raises(NotImplementedError, match="double backward"):
    BACKEND.evaluate_higher_order(op, {}, [x], [x], [x], [x], mode="compile")


def test_every_builtin_op_passes_jvp_second_order_and_vmap_rows_in_eager():
  report = cg.cross_check(BUILTIN, backends=["torch"], dtypes=["float64"],
                          modes=["eager", "vmap"], special=False, variants="none")
  assert report.ok, report.table(failures_only=True)
  checks = {}
  for r in _rows(report):
    checks.setdefault((r.op, r.params), set()).add((r.mode, r.check))
  assert set(checks) == {(op.name, label) for op in BUILTIN for label in
                         {r.params for r in report.rows if r.op == op.name}}
  want = {("eager", c) for c in ("forward", "vjp", "jvp", "second_order", "custom_rule")} | {
      ("vmap", "forward"), ("vmap", "vjp"), ("vmap", "custom_rule")}
  for key, found in checks.items():
    assert found == want, key


def test_forward_mode_follows_the_backward_not_the_forward():
  """ste_quantize: the tangent is the straight-through 1, not round's derivative 0."""
  op = cg.get("ste_quantize")
  x = np.array([0.3, -1.4, 2.6])
  t = np.array([1.0, 2.0, -3.0])
  tangents, second = BACKEND.evaluate_higher_order(op, {}, [x], [np.ones(3)], [t], None)
  np.testing.assert_array_equal(tangents[0], t)
  assert second is None


def test_vmap_gives_the_reference_per_example():
  op = cg.get("center_loss")
  rng = np.random.default_rng(3)
  examples = [op.sample(rng) for _ in range(3)]
  batch = [np.stack(parts) for parts in zip(*examples)]
  g = rng.standard_normal(3)
  result = BACKEND.evaluate_transformed(op, {}, batch, [g])["vmap"]
  for b, example in enumerate(examples):
    out, vjp_fn = cg.numpy.vjp(op, *example)
    np.testing.assert_allclose(result[0][0][b], out, rtol=1e-12)
    dx, dy, dc = vjp_fn(g[b])
    assert dy is None and result[1][1] is None
    np.testing.assert_allclose(result[1][0][b], dx, rtol=1e-12)
    np.testing.assert_allclose(result[1][2][b], dc, rtol=1e-12)


def test_a_torch_backward_off_by_one_percent_fails_jvp_second_order_and_vmap():
  """x * x with torch's backward 1.01 * 2 x g: its transpose (forward mode) and its
  derivative (second order) are off by 1% too; JAX, with the right backward, passes."""
  op = cg.OpDef("t_torch_scaled", lambda xp, x: (x * x, (x,)),
                lambda xp, r, g: ((2.02 if xp.backend == "torch" else 2.0) * r[0] * g,),
                sample=_sample)
  report = cg.cross_check([op], backends=["torch", "jax"], dtypes=["float64"],
                          modes=["eager", "vmap"], special=False)
  assert {(r.backend, r.mode, r.check) for r in report.failures} == {
      ("torch", "eager", "vjp"), ("torch", "eager", "jvp"), ("torch", "eager", "second_order"),
      ("torch", "vmap", "vjp"), ("torch", "eager", "variant")}


def test_a_backward_wrong_only_in_its_derivative_fails_only_second_order():
  """torch's residual is x rounded to 2^-20: first order (and its transpose, forward mode)
  passes in float32, second order differentiates the rounding (zero) instead of x (one)."""
  def forward(xp, x):
    residual = xp.round(x * 2.0**20) / 2.0**20 if xp.backend == "torch" else x
    return x * x, (residual,)

  op = cg.OpDef("t_torch_rounded_residual", forward, lambda xp, r, g: (2.0 * r[0] * g,),
                sample=_sample)
  report = cg.cross_check([op], backends=["torch"], dtypes=["float32"], modes=["eager"],
                          special=False)
  assert {(r.backend, r.check) for r in report.failures} == {("torch", "second_order")}
  assert {r.check for r in _rows(report)} >= {"forward", "vjp", "jvp", "second_order"}
