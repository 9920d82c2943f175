"""center_loss against the paper's formulas, computed here with plain loops."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad import layers
from crossgrad.checker import finite_diff

BACKENDS = ("numpy", "tensorflow", "jax")


def _data(seed=0, m=9, d=3, num_classes=4, dtype=np.float64):
  rng = np.random.default_rng(seed)
  labels = np.array([0, 2, 2, 0, 1, 2, 0, 2, 1][:m], np.int32)  # Class 3 has no sample.
  return (rng.standard_normal((m, d)).astype(dtype), labels,
          rng.standard_normal((num_classes, d)).astype(dtype))


def _jax_center_loss(centers, x, y, weight=1.0):
  return weight * cg.jax.get("center_loss")(x, y, centers)


def loss_formula(x, y, c):
  return sum(0.5 * np.sum((x[i] - c[y[i]]) ** 2) for i in range(len(y)))


def delta_c_formula(x, y, c):
  """The paper's delta c_j = sum_i [y_i = j](c_j - x_i) / (1 + sum_i [y_i = j])."""
  delta = np.zeros_like(c)
  for j in range(len(c)):
    members = [i for i in range(len(y)) if y[i] == j]
    for i in members:
      delta[j] += c[j] - x[i]
    delta[j] /= 1 + len(members)
  return delta


def _loss_and_grads(backend, x, y, c, g, mode="eager"):
  """Loss, dx and dc for upstream gradient g, through the framework's own autodiff."""
  if backend == "numpy":
    loss, vjp_fn = cg.numpy.vjp("center_loss", x, y, c)
    dx, dy, dc = vjp_fn(np.asarray(g, x.dtype))
    assert dy is None
    return loss, dx, dc
  if backend == "tensorflow":
    op = cg.tensorflow.get("center_loss")

    def run(x, y, c):
      with tf.GradientTape() as tape:
        tape.watch([x, c])
        loss = op(x, y, c)
      return (loss,) + tuple(tape.gradient(loss, [x, c], output_gradients=tf.constant(g, x.dtype)))

    if mode == "jit":
      run = tf.function(run, jit_compile=True)
    return [t.numpy() for t in run(tf.constant(x), tf.constant(y), tf.constant(c))]
  op = cg.jax.get("center_loss")

  def run(x, y, c):
    loss, vjp_fn = jax.vjp(lambda x, c: op(x, y, c), x, c)
    return (loss,) + vjp_fn(jnp.asarray(g, x.dtype))

  if mode == "jit":
    run = jax.jit(run)
  return [np.asarray(t) for t in run(x, y, c)]


@pytest.mark.parametrize("backend, mode", [
    ("numpy", "eager"), ("tensorflow", "eager"), ("tensorflow", "jit"), ("jax", "eager"),
    ("jax", "jit")])
def test_loss_dx_and_paper_dc(backend, mode):
  x, y, c = _data()
  g = 0.7
  with jax.enable_x64(True):
    loss, dx, dc = _loss_and_grads(backend, x, y, c, g, mode)
  np.testing.assert_allclose(loss, loss_formula(x, y, c), rtol=1e-12)
  np.testing.assert_allclose(dx, g * (x - c[y]), rtol=1e-12)
  np.testing.assert_allclose(dc, g * delta_c_formula(x, y, c), rtol=1e-12, atol=1e-15)
  np.testing.assert_array_equal(dc[3], 0.0)  # No sample of class 3 in the batch.


def _vjp_error_for_x(op, x, y, c):
  """Finite differences of the forward in x (centers fixed) against the op's dx."""
  def forward(inputs):
    return [np.asarray(cg.numpy.get(op)(inputs[0], y, c))]

  def vjp(inputs, cotangents):
    _, vjp_fn = cg.numpy.vjp(op, inputs[0], y, c)
    return [vjp_fn(cotangents[0])[0]]

  return finite_diff.full_jacobian_error(forward, vjp, [x])


def test_dx_is_the_derivative_by_finite_differences():
  x, y, c = _data()
  assert _vjp_error_for_x("center_loss", x, y, c) < 1e-8


def _planted(name, backward):
  return dataclasses.replace(cg.get("center_loss"), name=name, backward=backward)


def test_checks_catch_planted_wrong_gradients():
  x, y, c = _data()
  op = cg.get("center_loss")

  def plain_derivative(xp, residuals, g):  # dc without the paper's 1 / (1 + n_j).
    dx, _, dc = op.backward(xp, residuals, g)
    counts = xp.sum(residuals[1], axis=0)
    return dx, None, dc * xp.expand_dims(1.0 + counts, 1)

  def half_dx(xp, residuals, g):
    dx, _, dc = op.backward(xp, residuals, g)
    return 0.5 * dx, None, dc

  _, vjp_fn = cg.numpy.vjp(_planted("planted_dc", plain_derivative), x, y, c)
  assert np.max(np.abs(vjp_fn(np.float64(1.0))[2] - delta_c_formula(x, y, c))) > 0.1
  assert _vjp_error_for_x(_planted("planted_dx", half_dx), x, y, c) > 0.1


def test_cross_check_passes_and_reports_dc_is_not_the_derivative():
  report = cg.cross_check(["center_loss"], dtypes=("float32",), modes=("jit",))
  assert report.ok, report.table(failures_only=True)
  (row,) = [r for r in report.rows if r.check == "declared"]
  assert row.error > 0.1 and "no oracle" in row.note  # The paper's dc: no derivative.


def test_sgd_step_applies_the_papers_center_update():
  x, y, c = _data(dtype=np.float32)
  alpha, lam = 0.5, 0.01
  expected = c - alpha * delta_c_formula(x.astype(np.float64), y, c.astype(np.float64))

  layer = layers.CenterLoss(num_classes=4, weight=lam)
  layer(x, y)
  layer.centers.assign(c)
  optimizer = tf.keras.optimizers.SGD(learning_rate=alpha / lam)
  with tf.GradientTape() as tape:
    loss = layer(x, y)
  optimizer.apply_gradients(zip(tape.gradient(loss, [layer.centers]), [layer.centers]))
  np.testing.assert_allclose(layer.centers.numpy(), expected, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(loss.numpy(), lam * loss_formula(x, y, c), rtol=1e-5)

  grad = jax.grad(_jax_center_loss)(jnp.asarray(c), x, y, lam)
  np.testing.assert_allclose(c - alpha / lam * np.asarray(grad), expected, rtol=1e-5,
                             atol=1e-6)


def test_centers_converge_to_class_means_with_alpha_one():
  """Repeated paper updates on a fixed batch move each center to its class mean."""
  x, y, _ = _data()
  with jax.enable_x64(True):
    centers = jnp.zeros((4, 3), "float64")  # The paper's start.
    step = jax.jit(lambda c: c - jax.grad(_jax_center_loss)(c, x, y))
    for _ in range(60):
      centers = step(centers)
  for j in range(3):
    np.testing.assert_allclose(centers[j], x[y == j].mean(axis=0), rtol=1e-9)
  np.testing.assert_array_equal(centers[3], 0.0)  # Untouched: no sample.


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("labels", [[0, 4, 1], [0, -1, 1]])
def test_out_of_range_labels_are_a_clear_error_in_eager(backend, labels):
  x, _, c = _data(m=3)
  y = np.array(labels, np.int32)
  with pytest.raises(cg.CrossgradError, match=r"center_loss.*input 'y': label out of range: "
                     r"expected labels in \[0, 4\)"):
    getattr(cg, backend).get("center_loss")(x, y, c)


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_out_of_range_label_under_jit_counts_a_zero_center(backend):
  """Documented jit behaviour: the sample's center is zero and it moves no center."""
  x, _, c = _data(m=4)
  y = np.array([0, 9, 2, 2], np.int32)
  g = 1.0
  with jax.enable_x64(True):
    loss, dx, dc = _loss_and_grads(backend, x, y, c, g, mode="jit")
  kept = np.array([True, False, True, True])
  np.testing.assert_allclose(loss, loss_formula(x[kept], y[kept], c)
                             + 0.5 * np.sum(x[1] ** 2), rtol=1e-12)
  np.testing.assert_allclose(dx[1], x[1], rtol=1e-12)
  np.testing.assert_allclose(dc, delta_c_formula(x[kept], y[kept], c), rtol=1e-12,
                             atol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("change, argument, problem", [
    (lambda x, y, c: (x, y.astype(np.float64), c), "input 'y'", "labels must be integers"),
    (lambda x, y, c: (x, y[:-1], c), "input 'y'", "one label per feature row"),
    (lambda x, y, c: (x, y[:, None], c), "input 'y'", "input must have rank 1"),
    (lambda x, y, c: (x, y, c[:, :2]), "input 'c'", "centers must have the features' width"),
    (lambda x, y, c: (x, y, c.astype(np.float32)), "input 'c'", "features' dtype"),
    (lambda x, y, c: (x[0], y, c), "input 'x'", "input must have rank 2"),
])
def test_bad_input_is_a_clear_error(backend, change, argument, problem):
  inputs = change(*_data())
  with jax.enable_x64(True):
    with pytest.raises(cg.CrossgradError) as info:
      getattr(cg, backend).get("center_loss")(*inputs)
  error = info.value
  assert (error.op, error.backend, error.argument) == ("center_loss", backend, argument)
  assert problem in error.problem and error.expected is not None and error.actual


def test_out_of_range_labels_are_a_clear_error_while_differentiating_eagerly():
  x, _, c = _data(m=3)
  y = np.array([0, 4, 1], np.int32)
  with pytest.raises(cg.CrossgradError, match="label out of range"):
    jax.grad(cg.jax.get("center_loss"), argnums=(0, 2))(x, y, c)
  with pytest.raises(cg.CrossgradError, match="label out of range"):
    with tf.GradientTape() as tape:
      xt = tf.constant(x)
      tape.watch(xt)
      cg.tensorflow.get("center_loss")(xt, y, c)
