"""The cross-check's jvp, second_order, transformation and round-trip rows catch what
they are for, and skip, with the reason, what cannot run."""

import jax
import numpy as np
import pytest

import crossgrad as cg
from crossgrad.checker import higher_order


def _square_fwd(xp, x):
  return x * x, (x,)


def _sample(rng):
  return (rng.standard_normal((3, 4)),)


def test_a_backward_wrong_only_in_its_derivative_fails_only_second_order():
  """JAX's residual is x rounded to 2^-20: first order passes in float32, second order
  differentiates the rounding (zero) instead of x (one)."""
  def forward(xp, x):
    residual = xp.round(x * 2.0**20) / 2.0**20 if xp.backend == "jax" else x
    return x * x, (residual,)

  op = cg.OpDef("t_rounded_residual", forward, lambda xp, r, g: (2.0 * r[0] * g,),
                sample=_sample)
  report = cg.cross_check([op], dtypes=["float32"], modes=["eager", "jit"])
  assert {(r.backend, r.check) for r in report.failures} == {("jax", "second_order")}


def test_backward_not_differentiable_is_a_skipped_row_with_its_reason():
  op = cg.OpDef("t_declared", _square_fwd, lambda xp, r, g: (2.0 * r[0] * g,),
                sample=_sample, backward_not_differentiable="host lookup table")
  report = cg.cross_check([op], backends=["jax"], dtypes=["float32"], modes=["jit"])
  assert report.ok
  (row,) = [r for r in report.rows if r.check == "skipped"]
  assert row.note == "second_order: backward not differentiable: host lookup table"
  assert not any(r.check == "second_order" for r in report.rows)
  with pytest.raises(cg.CrossgradError, match="backward_not_differentiable"):
    cg.OpDef("t_bad_reason", _square_fwd, lambda xp, r, g: (g,), backward_not_differentiable="")


@pytest.mark.parametrize("scale", [1.0, 1.01])
def test_large_surrogates_are_checked_by_dot_products(scale):
  """custom_add at 5,000 elements a side: its forward mode (no surrogate) is checked by
  dot products with the transposed reference backward; second order by directional
  finite differences."""
  rng = np.random.default_rng(0)
  inputs = [rng.standard_normal(5000) for _ in range(3)]
  op = cg.get("custom_add")
  tangents = [rng.standard_normal(5000) for _ in range(3)]
  reference = higher_order.reference_jvp(op, {}, inputs, tangents, rng)
  assert reference.dual and reference.how.startswith("transposed backward")
  with jax.enable_x64(True):
    _, tangent = jax.jvp(cg.jax.get(op), tuple(inputs), tuple(tangents))
  err, note = reference.error([np.asarray(tangent) * scale], ["float64"], ["output 0"])
  assert (err < 1e-10) if scale == 1.0 else (err > 1e-3), (err, note)

  g, v = [rng.standard_normal(5000)], tangents
  second = higher_order.reference_second_order(op, {}, inputs, g, v, rng)
  assert second.dual and second.how == "directional finite differences"
  c, k, d = inputs
  # <vjp, v> = (c + k + d) g v_c + d g v_k + (c + k) g v_d: its gradient, by hand.
  by_hand = [g[0] * (v[0] + v[2]), g[0] * (v[0] + v[2]), g[0] * (v[0] + v[1])]
  err, _ = second.error([a * scale for a in by_hand], ["float64"] * 3, ["dc", "dk", "dd"])
  assert (err < 1e-6) if scale == 1.0 else (err > 1e-4)


def test_export_modes_run_only_when_named():
  default = cg.cross_check(["leaky_relu"], dtypes=["float32"])
  assert not {r.mode for r in default.rows} & {"saved_model", "jax2tf", "export"}
  assert {r.mode for r in default.rows} >= {"vmap", "scan", "checkpoint", "vectorized_map"}
  named = cg.cross_check(["leaky_relu"], dtypes=["float32"], modes=["export"])
  assert named.ok
  assert {(r.backend, r.mode, r.check) for r in named.rows if r.backend != "numpy"} == {
      ("jax", "export", c) for c in ("forward", "vjp", "round_trip", "skipped",
                                     "second_order", "custom_rule")}


def test_large_exact_ops_get_second_order_in_full():
  """positive_matmul beyond SECOND_ORDER_FULL_LIMIT: the gradient of <vjp(g), v> comes in
  full from two reference backwards (its Hessian blocks couple x and w), equal to JAX's
  forward-over-reverse; a result wrong in one element, or scaled, fails."""
  rng = np.random.default_rng(1)
  x, w = rng.standard_normal((60, 40)), rng.standard_normal((50, 40))
  assert x.size + w.size > higher_order.SECOND_ORDER_FULL_LIMIT
  op, g = cg.get("positive_matmul"), [rng.standard_normal((60, 50))]
  v = [rng.standard_normal(x.shape), rng.standard_normal(w.shape)]
  second = higher_order.reference_second_order(op, {}, [x, w], g, v, rng)
  assert second.dual is None and second.how.startswith("Hessian-vector")
  with jax.enable_x64(True):
    def phi(a, b):
      _, vjp_fn = jax.vjp(cg.jax.get(op), a, b)
      da, db = vjp_fn(g[0])
      return (da * v[0]).sum() + (db * v[1]).sum()
    want = [np.asarray(t) for t in jax.grad(phi, argnums=(0, 1))(x, w)]
  names, dtypes = ["dx", "dw"], ["float64", "float64"]
  err, _ = second.error(want, dtypes, names)
  assert err < 1e-6, err
  one_off = [want[0], want[1].copy()]
  one_off[1][7, 3] += 1e-3 * np.abs(want[1]).max()
  assert second.error(one_off, dtypes, names)[0] > 1e-4
  assert second.error([a * 1.01 for a in want], dtypes, names)[0] > 1e-4
