"""JAX: jit, vmap, grad, grad-of-grad; 64-bit mode stays scoped."""

import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import crossgrad as cg
from crossgrad.registry import validation

X = jnp.array([[-2.0, -0.5, 0.5], [1.0, 2.5, -3.5]])
SLOPE = jnp.where(X > 0, 1.0, 0.2)  # d leaky_relu / dx, by hand.
leaky_relu = cg.jax.get("leaky_relu")


def loss(x):
  return jnp.sum(leaky_relu(x) ** 2)


def test_jit_and_grad_agree_with_the_formula():
  chex.assert_trees_all_close(jax.jit(jax.grad(loss))(X), 2 * jnp.where(X > 0, X, 0.2 * X) * SLOPE,
                              rtol=1e-6)


def test_vmap_of_grad():
  per_row = jax.vmap(jax.grad(loss))(X)
  chex.assert_trees_all_close(per_row, jax.grad(loss)(X), rtol=1e-6)


def test_grad_of_grad_differentiates_the_backward():
  # d/dx of 2 l(x) l'(x) is 2 l'(x)^2 (l'' = 0 away from the kink).
  second = jax.jit(jax.grad(lambda x: jnp.sum(jax.grad(loss)(x))))(X)
  chex.assert_trees_all_close(second, 2 * SLOPE**2, rtol=1e-6)


def test_emitted_op_is_a_custom_jvp_without_callbacks():
  forward = str(jax.make_jaxpr(loss)(X))
  backward = str(jax.make_jaxpr(jax.grad(loss))(X))
  assert "custom_jvp_call" in forward
  assert "crossgrad_transposable" in backward  # The backward, as the tangent's transpose.
  assert "callback" not in forward + backward


def test_float64_scope_does_not_leak():
  assert not jax.config.jax_enable_x64
  report = cg.cross_check(["leaky_relu"], backends=["jax"], dtypes=["float64"])
  assert report.ok
  assert not jax.config.jax_enable_x64


def test_backward_shape_error_at_trace_time_under_jit():
  bad = cg.OpDef("t_jax_bad", lambda xp, x: (x * 2.0, ()),
                 lambda xp, residuals, g: (xp.sum(g, axis=0),))
  with pytest.raises(cg.CrossgradError) as info:
    jax.jit(jax.grad(lambda x: jnp.sum(cg.jax.get(bad)(x))))(X)
  assert ("op 't_jax_bad' (jax), cotangent for input 'x': cotangent shape differs from the "
          "input's: expected float32[2, 3], got float32[3]") in str(info.value)


def _counting_op(name, read_values):
  calls = []

  def forward(xp, x):
    calls.append(1)
    if read_values:
      validation.concrete_values(x)
    return 2.0 * x, ()

  return calls, cg.OpDef(name=name, forward=forward, backward=lambda xp, r, g: (2.0 * g,),
                         sample=lambda rng: (rng.standard_normal(3),))


def test_eager_calls_run_compiled_unless_the_op_checks_values():
  """An eager call runs one compiled program (the Python forward runs while tracing, not
  per call); an op that checks its input values stays op by op, so each call sees them."""
  for read_values, python_runs in ((False, 2), (True, 4)):
    calls, op = _counting_op(f"jax_counting_{read_values}", read_values)
    fn = cg.jax.get(op)
    for _ in range(4):  # The first call runs without the jit, the second traces it.
      np.testing.assert_allclose(fn(jnp.arange(3.0)), [0.0, 2.0, 4.0])
    assert len(calls) == python_runs, read_values


def test_an_op_checking_values_in_check_values_runs_compiled_and_checks_each_call():
  """`OpDef(check_values=...)` runs before the forward on every eager call, with the
  values, while the forward (which reads none) runs compiled; under `jax.jit` the check
  gets no values and the bad call runs (documented in the OpDef)."""
  calls, seen = [], []

  def check_values(xp, x):
    values = validation.concrete_values(x)
    seen.append(values)
    if values is not None and (values < 0).any():
      raise cg.CrossgradError("negative input", argument="input 'x'")

  def forward(xp, x):
    calls.append(1)
    return 2.0 * x, ()

  fn = cg.jax.get(cg.OpDef(name="jax_check_values", forward=forward,
                           backward=lambda xp, r, g: (2.0 * g,), check_values=check_values))
  for _ in range(4):
    np.testing.assert_allclose(fn(jnp.arange(3.0)), [0.0, 2.0, 4.0])
  assert len(calls) == 2 and len(seen) == 4  # Compiled, as an op without checks.
  np.testing.assert_array_equal(seen[-1], [0.0, 1.0, 2.0])
  with pytest.raises(cg.CrossgradError, match=r"op 'jax_check_values' \(jax\), input 'x': "
                                              "negative input"):
    fn(jnp.array([1.0, -1.0]))
  np.testing.assert_allclose(jax.jit(fn)(jnp.array([1.0, -1.0])), [2.0, -2.0])
  assert seen[-1] is None


def _max_and_argmax(argmax):
  """A user's op: the row maximum and its index, an integer output without a cotangent."""
  def forward(xp, x):
    idx = argmax(xp, x)
    return (xp.max(x, axis=-1), idx), (idx, x.shape[-1])

  def backward(xp, residuals, g):
    idx, n = residuals
    return (xp.one_hot(idx, n, dtype=g[0].dtype) * g[0][..., None],)

  return forward, backward


@pytest.mark.parametrize("planted", [False, True])
def test_an_index_output_is_compared_by_value_without_x64(planted):
  """Without x64 (the float32 rows) JAX's argmax is int32, NumPy's int64: a correct op
  failed every JAX float32 row on the dtype alone. Its values are compared; an index that
  differs (argmin in JAX alone) still fails."""
  def argmax(xp, x):
    pick = xp.argmin if planted and xp.backend == "jax" else xp.argmax
    return pick(x, axis=-1)

  forward, backward = _max_and_argmax(argmax)
  op = cg.OpDef(name=f"jax_max_argmax_{planted}", forward=forward, backward=backward,
                sample=lambda rng: (rng.permutation(20).reshape(4, 5) * 1.0,))
  assert jax.numpy.argmax(jnp.ones(3, jnp.float32)).dtype == jnp.int32  # What it is about.
  report = cg.cross_check([op], backends=["jax"], dtypes=["float32"])
  forward_rows = [r for r in report.rows if r.check == "forward" and r.backend == "jax"]
  assert {r.mode for r in forward_rows} >= {"eager", "jit", "vmap", "scan", "checkpoint"}
  if planted:
    assert not any(r.ok for r in forward_rows), report.table()
    assert all(re.search(r"output 1\[[0-9, ]+\]: \d+ vs reference \d+", r.note)
               for r in forward_rows), report.table()  # Its values, not its dtype.
  else:
    assert report.ok, report.table(failures_only=True)


def test_a_jax2tf_round_trip_compares_an_index_output_by_value():
  """jax2tf runs JAX's op (without x64: int32 argmax) in the TF backend, which narrows
  nothing itself: its rows take the sending backend's rule."""
  forward, backward = _max_and_argmax(lambda xp, x: xp.argmax(x, axis=-1))
  op = cg.OpDef(name="jax2tf_max_argmax", forward=forward, backward=backward,
                sample=lambda rng: (rng.permutation(20).reshape(4, 5) * 1.0,))
  report = cg.cross_check([op], backends=["tensorflow"], dtypes=["float32"], modes=["jax2tf"])
  rows = [r for r in report.rows if r.mode == "jax2tf" and r.check == "forward"]
  assert rows and report.ok, report.table(failures_only=True)
