"""TensorFlow: eager, tf.function, XLA, tf.Variable inputs, Keras; never flips numpy behaviour."""

import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg

X = np.array([[-2.0, -0.5, 0.5], [1.0, 2.5, -3.5]], np.float32)
SLOPE = np.where(X > 0, 1.0, 0.2).astype(np.float32)  # d leaky_relu / dx, by hand.


def _grad_of_sum(x):
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = cg.tensorflow.get("leaky_relu")(x)
  return y, tape.gradient(y, x)


@pytest.mark.parametrize("wrap", [
    lambda f: f,
    tf.function,
    lambda f: tf.function(f, jit_compile=True),
], ids=["eager", "tf.function", "jit_compile"])
def test_modes_agree_with_the_formula(wrap):
  y, dx = wrap(_grad_of_sum)(tf.constant(X))
  np.testing.assert_allclose(y, np.where(X > 0, X, 0.2 * X), rtol=1e-6)
  np.testing.assert_allclose(dx, SLOPE, rtol=1e-6)


def test_emitted_op_is_a_custom_gradient_in_the_graph():
  graph = tf.function(_grad_of_sum).get_concrete_function(
      tf.TensorSpec([2, 3], tf.float32)).graph
  op_types = {op.type for op in graph.get_operations()}
  assert "IdentityN" in op_types  # tf.custom_gradient's marker op.
  assert "PyFunc" not in op_types and "EagerPyFunc" not in op_types


def test_variable_inputs_receive_gradients():
  v = tf.Variable(X)
  for wrap in (lambda f: f, lambda f: tf.function(f, jit_compile=True)):
    def step():
      with tf.GradientTape() as tape:
        loss = tf.reduce_sum(cg.tensorflow.get("leaky_relu")(v) * 2.0)
      return tape.gradient(loss, v)
    np.testing.assert_allclose(wrap(step)(), 2.0 * SLOPE, rtol=1e-6)


def test_inside_a_keras_layer():
  import keras  # pylint: disable=g-import-not-at-top

  class QuantizedDense(keras.layers.Layer):
    """Dense layer whose kernel is rounded to 4-bit levels with a clipped STE."""

    def build(self, input_shape):
      self.kernel = self.add_weight(shape=(input_shape[-1], 2), initializer="ones")

    def call(self, x):
      quantize = cg.tensorflow.get("ste_quantize", bits=4, scale=0.25, clip=True)
      return tf.matmul(x, quantize(self.kernel))

  layer = QuantizedDense()
  x = tf.constant([[0.3, -0.6, 0.9]])
  layer(x)
  layer.kernel.assign([[0.3, 5.0], [-0.6, 0.1], [1.6, -2.5]])
  with tf.GradientTape() as tape:
    y = layer(x)
  grad = tape.gradient(y, layer.kernel)
  q = np.clip(np.round(layer.kernel.numpy() / 0.25), -8, 7) * 0.25
  np.testing.assert_allclose(y, x.numpy() @ q, rtol=1e-6)
  inside = (layer.kernel.numpy() >= -2.0) & (layer.kernel.numpy() <= 1.75)
  np.testing.assert_allclose(grad, np.where(inside, x.numpy().T * np.ones((1, 2)), 0.0))


def test_numpy_behaviour_is_never_enabled():
  """tf.experimental.numpy's switch adds NumPy methods to every tensor; crossgrad never flips it."""
  cg.cross_check(["ste_quantize"], backends=["tensorflow"], dtypes=["float32"])
  assert not hasattr(tf.constant([1.5]), "ravel")


def test_backward_errors_surface_from_tape_gradient_in_graph_mode():
  bad = cg.OpDef("t_tf_bad", lambda xp, x: (x * 2.0, ()), lambda xp, residuals, g: (g, g))

  @tf.function
  def grad(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = cg.tensorflow.get(bad)(x)
    return tape.gradient(y, x)

  with pytest.raises(cg.CrossgradError, match=r"op 't_tf_bad' \(tensorflow\), backward: "
                     r"backward returned the wrong number of cotangents: expected 1 \(x\), got 2"):
    grad(tf.constant(X))


def test_devices_are_named_like_jax():
  assert cg.tensorflow.devices()[0] == "cpu:0"


def _segment_sum_forward(xp, x, ids):
  return xp.segment_sum(x, ids, 3), (ids,)


def _segment_sum_backward(xp, residuals, g):
  (ids,) = residuals
  return xp.take(g, ids, axis=0), None  # Transposed in forward mode: a tf.IndexedSlices.


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_forward_mode_tangents_that_come_as_indexed_slices_are_dense(mode):
  from crossgrad.backends import tensorflow as backend  # pylint: disable=g-import-not-at-top
  op = cg.OpDef("segment_sum_rows", _segment_sum_forward, _segment_sum_backward,
                nondiff=("ids",),
                sample=lambda rng: (rng.standard_normal((4, 2)), np.array([0, 2, 2, 1])))
  x, ids = np.arange(8.0).reshape(4, 2), np.array([0, 2, 2, 1], np.int32)
  tangent = np.arange(8.0).reshape(4, 2) + 1.0
  (out_tangent,), second = backend.evaluate_higher_order(
      op, {}, [x, ids], [np.ones((3, 2))], [tangent, None], [tangent, None], mode=mode)
  expected = np.zeros((3, 2))
  np.add.at(expected, ids, tangent)  # The op is linear: its tangent is the op of the tangent.
  np.testing.assert_array_equal(out_tangent, expected)
  np.testing.assert_array_equal(second[0], np.zeros((4, 2)))


def test_checks_at_several_sizes_do_not_warn_of_retracing():
  """The check's graph and XLA programs are traced once per input signature, each in a
  function of its own: checking one op at several sizes from Python logs none of TF's
  "triggered tf.function retracing" warnings (each program traced once, as it should)."""
  import logging  # pylint: disable=g-import-not-at-top
  messages = []
  handler = logging.Handler()
  handler.emit = lambda record: messages.append(record.getMessage())
  tf.get_logger().addHandler(handler)
  try:
    reports = [cg.cross_check(["leaky_relu"], backends=["tensorflow"], modes=["graph", "jit"],
                              dtypes=["float32"], special=False,
                              inputs=[np.linspace(0.5, 2.0, n) * (-1.0) ** np.arange(n)])
               for n in (5, 7, 9, 11, 13)]  # Signs alternate: no input at the kink, 0.
  finally:
    tf.get_logger().removeHandler(handler)
  assert all(report.ok for report in reports)
  assert not [m for m in messages if "retracing" in m], messages
