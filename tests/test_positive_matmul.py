"""positive_matmul against x @ relu(w)^T and each framework's own autodiff of it."""

import dataclasses

import jax
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad import layers
from crossgrad.checker.rows import finite_differences


def _data(seed=0):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((5, 4))
  w = rng.standard_normal((3, 4))
  w[0, 1] = 0.0  # relu'(0) is taken as 0: no gradient at an exact zero either.
  return x, w, rng.standard_normal((5, 3))


def _formulas(x, w, g):
  positive = w > 0
  w_pos = np.where(positive, w, 0.0)
  return x @ w_pos.T, g @ w_pos, np.where(positive, g.T @ x, 0.0)


def _through(backend, x, w, g, mode):
  if backend == "numpy":
    y, vjp_fn = cg.numpy.vjp("positive_matmul", x, w)
    return (y,) + vjp_fn(g)
  if backend == "tensorflow":
    op = cg.tensorflow.get("positive_matmul")

    def run(x, w, g):
      with tf.GradientTape() as tape:
        tape.watch([x, w])
        y = op(x, w)
      return (y,) + tuple(tape.gradient(y, [x, w], output_gradients=g))

    if mode == "jit":
      run = tf.function(run, jit_compile=True)
    return [t.numpy() for t in run(tf.constant(x), tf.constant(w), tf.constant(g))]

  def run(x, w, g):
    y, vjp_fn = jax.vjp(cg.jax.get("positive_matmul"), x, w)
    return (y,) + vjp_fn(g)

  if mode == "jit":
    run = jax.jit(run)
  return [np.asarray(t) for t in run(x, w, g)]


@pytest.mark.parametrize("backend, mode", [
    ("numpy", "eager"), ("tensorflow", "eager"), ("tensorflow", "jit"), ("jax", "eager"),
    ("jax", "jit")])
def test_matches_the_formulas(backend, mode):
  x, w, g = _data()
  with jax.enable_x64(True):
    got = _through(backend, x, w, g, mode)
  for name, a, e in zip(("y", "dx", "dw"), got, _formulas(x, w, g)):
    np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-15, err_msg=name)
  assert got[2][0, 1] == 0.0 and np.all(got[2][w < 0] == 0.0)


def test_equals_each_frameworks_autodiff_of_the_plain_expression():
  x, w, g = _data()
  with jax.enable_x64(True):
    plain = jax.vjp(lambda x, w: x @ jax.nn.relu(w).T, x, w)[1](g)
    ours = jax.vjp(cg.jax.get("positive_matmul"), x, w)[1](g)
  for a, e in zip(ours, plain):
    np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-15)
  xt, wt = tf.constant(x), tf.constant(w)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch([xt, wt])
    plain_y = tf.matmul(xt, tf.nn.relu(wt), transpose_b=True)
    our_y = cg.tensorflow.get("positive_matmul")(xt, wt)
  for a, e in zip(tape.gradient(our_y, [xt, wt], output_gradients=tf.constant(g)),
                  tape.gradient(plain_y, [xt, wt], output_gradients=tf.constant(g))):
    np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-12, atol=1e-15)


def test_cross_check_passes():
  report = cg.cross_check(["positive_matmul"], dtypes=("float32",), modes=("jit",))
  assert report.ok, report.table(failures_only=True)
  assert [r.check for r in report.rows].count("fd") == 1


def test_finite_differences_catch_a_planted_unmasked_gradient():
  op = cg.get("positive_matmul")

  def unmasked(xp, residuals, g):  # The gradient passed everywhere, also where w <= 0.
    x, w_pos, _ = residuals
    return xp.matmul(g, w_pos), xp.matmul(xp.matrix_transpose(g), x)

  planted = dataclasses.replace(op, name="planted_positive_matmul", backward=unmasked)
  rng = np.random.default_rng(0)
  inputs = op.sample(rng)
  (row,) = finite_differences.finite_difference_rows(planted, {}, inputs)
  assert not row.ok and row.error > 0.1


def test_keras_layer_is_the_formula_and_starts_non_negative():
  rng = np.random.default_rng(1)
  x = rng.standard_normal((6, 4)).astype(np.float32)
  layer = layers.PositiveDense(3)
  layer(x)
  kernel = rng.standard_normal((3, 4)).astype(np.float32)
  bias = rng.standard_normal(3).astype(np.float32)
  layer.kernel.assign(kernel)
  layer.bias.assign(bias)
  np.testing.assert_allclose(layer(x).numpy(), x @ np.maximum(kernel, 0).T + bias, rtol=1e-6)
  np.testing.assert_array_equal(layer.effective_kernel.numpy(), np.maximum(kernel, 0))
  fresh = layers.PositiveDense(3)
  fresh.build((None, 4))
  assert np.all(fresh.kernel.numpy() >= 0)  # The default start: no weight starts dead.
  assert np.all(fresh.kernel.numpy() <= np.sqrt(6.0 / 7))


@pytest.mark.parametrize("backend", ["numpy", "tensorflow", "jax"])
@pytest.mark.parametrize("x_shape, w_shape, w_dtype, argument, problem", [
    ((5, 4), (3, 5), "float64", "input 'w'", "one column per input feature"),
    ((5, 4), (3, 4), "float32", "input 'w'", "inputs' dtype"),
    ((2, 5, 4), (3, 4), "float64", "input 'x'", "rank 2"),
    ((5, 4), (4,), "float64", "input 'w'", "rank 2"),
])
def test_bad_input_is_a_clear_error(backend, x_shape, w_shape, w_dtype, argument, problem):
  x, w = np.ones(x_shape), np.ones(w_shape, w_dtype)
  with jax.enable_x64(True):
    with pytest.raises(cg.CrossgradError) as info:
      getattr(cg, backend).get("positive_matmul")(x, w)
  error = info.value
  assert (error.op, error.backend, error.argument) == ("positive_matmul", backend, argument)
  assert problem in error.problem and error.expected is not None and error.actual
