"""crossgrad.tf1.port's JAX backward: translated, else jax2tf.call_tf with a one-time warning
and the reason in the check report; "native" refuses with the missing TF op types; the
check of a port with dtype limits reports them as rows instead of crashing."""

import warnings

import jax
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad import tf1


def roll_grad(op, grad):
  """Roll has no JAX translation (tf1/handlers.py), but XLA compiles it."""
  del op
  return tf.roll(grad, shift=1, axis=0)


def value_tiled_grad(op, grad):
  """Tile's multiples come from the inputs' values: under jax.jit the handler cannot
  replay it."""
  multiples = tf.cast(op.inputs[1][:1] * 0.0 + 1.0, tf.int32)
  return tf.tile(grad, multiples), tf.zeros_like(op.inputs[1])


def _sample(rng):
  return (rng.standard_normal((4,)), rng.standard_normal((4,)))


def test_auto_falls_back_to_call_tf_with_one_warning_and_the_reason_in_the_report():
  op = tf1.port("tf1_fb_roll", "Identity", roll_grad, register=False)
  assert "Roll" in op.unsupported_modes["jax:second_order"]
  fn = cg.jax.get(op)
  x = np.linspace(-1.0, 1.0, 4).astype(np.float32)
  with pytest.warns(UserWarning, match=r"tf1_fb_roll.*call_tf.*Roll"):
    got = jax.vjp(fn, x)[1](x * 2)[0]
  np.testing.assert_array_equal(got, np.roll(x * 2, 1))
  with warnings.catch_warnings():
    warnings.simplefilter("error")  # Once per port.
    got = jax.jit(lambda v: jax.vjp(fn, v)[1](v * 2)[0])(x)
  np.testing.assert_array_equal(got, np.roll(x * 2, 1))
  report = cg.cross_check([op], dtypes=("float32",))
  assert report.ok, report.table(failures_only=True)
  skipped = {r.note for r in report.rows if r.backend == "jax" and r.check == "skipped"}
  assert any("second_order" in n and "call_tf" in n and "Roll" in n for n in skipped)


def test_native_refuses_with_the_missing_op_types():
  fn = cg.jax.get(tf1.port("tf1_fb_roll_native", "Identity", roll_grad,
                           jax_backward="native", register=False))
  with pytest.raises(cg.CrossgradError, match=r"tf1_fb_roll_native.*Roll"):
    jax.grad(lambda v: fn(v).sum())(np.ones(3, np.float32))


def test_a_handler_that_cannot_replay_falls_back():
  x, y = _sample(np.random.default_rng(0))
  x, y = x.astype(np.float32), y.astype(np.float32)
  auto = cg.jax.get(tf1.port("tf1_fb_tiled", "Maximum", value_tiled_grad, register=False))
  with pytest.warns(UserWarning, match=r"tf1_fb_tiled.*replaying it in JAX failed"):
    gx, gy = jax.jit(jax.grad(lambda a, b: auto(a, b).sum(), argnums=(0, 1)))(x, y)
  np.testing.assert_array_equal(gx, np.ones(4))  # Tile by 1: the upstream gradient.
  np.testing.assert_array_equal(gy, np.zeros(4))
  native = cg.jax.get(tf1.port("tf1_fb_tiled_native", "Maximum", value_tiled_grad,
                               jax_backward="native", register=False))
  with pytest.raises(cg.CrossgradError, match=r"tf1_fb_tiled_native.*replaying it in JAX"):
    jax.jit(jax.grad(lambda a, b: native(a, b).sum()))(x, y)


def guided_relu_float32(op, grad):
  """Verbatim from saliency code: the mask is cast to float32 whatever the dtype."""
  return grad * tf.cast(op.outputs[0] > 0, "float32")


def test_a_gradient_that_only_runs_in_float32_is_checked_not_crashed():
  op = tf1.port("tf1_fb_guided", "Relu", guided_relu_float32, register=False)
  for backend in ("jax", "tensorflow"):
    assert "cannot run in float64" in op.unsupported_modes[f"{backend}:second_order"]
  report = cg.cross_check([op], dtypes=("float32",))
  assert report.ok, report.table(failures_only=True)
  declared = [r for r in report.rows if r.check == "declared"]
  assert declared and "legacy gradient failed" in declared[0].note
  # In float64 it is a CrossgradError naming the op and the gradient, in TF and JAX.
  x = tf.constant([1.0, -2.0], tf.float64)
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = cg.tensorflow.get(op)(x)
  with pytest.raises(cg.CrossgradError, match=r"tf1_fb_guided.*guided_relu_float32.*failed"):
    tape.gradient(y, x)
  # In float32 it runs: the mask of the positive outputs.
  fn = cg.jax.get(op)
  got = jax.grad(lambda v: fn(v).sum())(np.array([1.0, -2.0, 3.0], np.float32))
  np.testing.assert_array_equal(got, [1.0, 0.0, 1.0])
