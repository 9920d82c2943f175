"""Checks `crossgrad.keras` and `crossgrad.layers` under the Keras backend of this process
(run by tests/test_keras.py once per backend: `check_all` in its own process for its
backend, TensorFlow, and as a script in a subprocess for each other backend). Values and
gradients come from the backend's own autodiff and are compared with the NumPy reference;
the sampled masks are written to ``argv[1]`` for the parent to compare across backends."""

import sys

import keras
import numpy as np

import crossgrad as cg
from crossgrad import layers

BACKEND = keras.backend.backend()
RNG = np.random.default_rng(0)


def grads(loss_fn, variables):
  """d loss_fn() / d variables by the backend's own autodiff, as NumPy."""
  if BACKEND == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    with tf.GradientTape() as tape:
      loss = loss_fn()
    return [np.asarray(g) for g in tape.gradient(loss, [v.value for v in variables])]
  if BACKEND == "torch":
    import torch  # pylint: disable=g-import-not-at-top
    return [g.numpy() for g in torch.autograd.grad(loss_fn(), [v.value for v in variables])]
  import jax  # pylint: disable=g-import-not-at-top

  def of_values(values):
    with keras.StatelessScope(state_mapping=list(zip(variables, values))):
      return loss_fn()
  return [np.asarray(g) for g in jax.grad(of_values)([v.value for v in variables])]


def check_op_and_keras_ops():
  x, w = RNG.standard_normal((5, 4)).astype("float32"), RNG.standard_normal((3, 4)).astype(
      "float32")
  g = RNG.standard_normal((5, 3)).astype("float32")
  xv, wv = keras.Variable(x), keras.Variable(w)
  op = cg.keras.get("positive_matmul")
  got = grads(lambda: keras.ops.sum(keras.ops.multiply(op(xv, wv), g)), [xv, wv])
  want, vjp = cg.numpy.vjp("positive_matmul", x, w)
  np.testing.assert_allclose(keras.ops.convert_to_numpy(op(x, w)), want, rtol=1e-5)
  for a, b in zip(got, vjp(g)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  symbolic = op(keras.KerasTensor((None, 4)), keras.KerasTensor((3, 4)))
  assert tuple(symbolic.shape) == (None, 3) and symbolic.dtype == "float32", symbolic


def check_layers():
  x = RNG.standard_normal((6, 4)).astype("float32")
  dense = layers.PositiveDense(3)
  dense.build((None, 4))
  kernel = RNG.standard_normal((3, 4)).astype("float32")
  dense.kernel.assign(kernel)
  g = RNG.standard_normal((6, 3)).astype("float32")
  (dk,) = grads(lambda: keras.ops.sum(keras.ops.multiply(dense(x), g)), [dense.kernel])
  np.testing.assert_allclose(dk, np.where(kernel > 0, g.T @ x, 0), rtol=1e-5, atol=1e-6)

  labels = np.array([0, 1, 1, 2, 0, 1], np.int32)
  center = layers.CenterLoss(num_classes=4, weight=0.5)
  center.build((None, 4))
  center.centers.assign(RNG.standard_normal((4, 4)).astype("float32"))
  xv = keras.Variable(x)
  got = grads(lambda: center(xv, labels), [xv, center.centers])
  _, vjp = cg.numpy.vjp("center_loss", x, labels, keras.ops.convert_to_numpy(center.centers))
  dx, _, dc = vjp(np.float32(0.5))
  np.testing.assert_allclose(got[0], dx, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(got[1], dc, rtol=1e-5, atol=1e-6)


def check_attention_mask(out_path):
  p = RNG.uniform(size=(2, 3, 1)).astype("float32")
  features = RNG.uniform(0.5, 1.5, (2, 3, 2)).astype("float32")
  u = RNG.uniform(size=p.shape).astype("float32")
  g = RNG.standard_normal(features.shape).astype("float32")
  mask = layers.BernoulliAttentionMask(seed=3)
  pv = keras.Variable(p)
  (dp,) = grads(lambda: keras.ops.sum(keras.ops.multiply(mask(pv, features, training=True, u=u), g)), [pv])
  np.testing.assert_allclose(dp, np.sum(g * features, -1, keepdims=True), rtol=1e-5)
  np.testing.assert_array_equal(keras.ops.convert_to_numpy(mask(p, features)), p * features)
  sampled = [keras.ops.convert_to_numpy(mask(p, features, training=True)) for _ in range(2)]
  assert int(keras.ops.convert_to_numpy(mask.step)) == 2
  np.savez(out_path, step0=sampled[0], step1=sampled[1])


def check_sparse_layers():
  dense = np.zeros((5, 4, 2), np.float32)
  dense[[0, 2, 4], [1, 3, 0]] = RNG.standard_normal((3, 2))
  x = cg.SparseData.from_dense(keras.ops.convert_to_tensor(dense))
  conv = layers.SubmanifoldConv2D(3, 3, activation="relu")
  y = conv(x)
  want = cg.numpy.submanifold_conv2d(cg.SparseData.from_dense(dense), *[
      keras.ops.convert_to_numpy(w) for w in (conv.kernel, conv.bias)]).map(
          lambda a: np.maximum(a, 0))
  np.testing.assert_allclose(keras.ops.convert_to_numpy(y.M), want.M, rtol=1e-5, atol=1e-6)
  (dk,) = grads(lambda: keras.ops.sum(conv(x).M ** 2), [conv.kernel])
  assert np.all(np.isfinite(dk)) and np.any(dk != 0)


def check_framework_forms():
  """Torch: a layer is a torch.nn.Module; JAX: stateless_call is a pure function."""
  layer = layers.PositiveDense(2)
  x = RNG.standard_normal((3, 4)).astype("float32")
  layer.build((None, 4))
  if BACKEND == "torch":
    import torch  # pylint: disable=g-import-not-at-top
    assert isinstance(layer, torch.nn.Module) and len(list(layer.parameters())) == 2
  if BACKEND == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    kernel = keras.ops.convert_to_numpy(layer.kernel)

    def loss(trainable):
      y, _ = layer.stateless_call(trainable, [], x)
      return y.sum()
    dk, db = jax.grad(loss)([v.value for v in layer.trainable_variables])
    np.testing.assert_allclose(dk, np.where(kernel > 0, np.ones((3, 2)).T @ x, 0), rtol=1e-5)
    np.testing.assert_allclose(db, [3.0, 3.0])


def check_straight_through_trains_what_keras_autodiff_would_not():
  """Dense -> quantize -> PositiveDense: through the op's straight-through backward the
  first kernel moves; through Keras' own derivative of rounding (zero) it stays put."""
  x = RNG.standard_normal((16, 4)).astype("float32")
  y = RNG.standard_normal((16, 2)).astype("float32")
  moved = {}
  for name, quantize in (("crossgrad", cg.keras.OpLayer("ste_quantize", scale=0.25)),
                         ("keras", keras.layers.Lambda(lambda t: keras.ops.round(t * 4) / 4))):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    first = keras.layers.Dense(4)
    model = keras.Model(inputs, layers.PositiveDense(2)(quantize(first(inputs))))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse",
                  jit_compile=BACKEND != "torch")
    before = keras.ops.convert_to_numpy(first.kernel)
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    moved[name] = float(np.abs(keras.ops.convert_to_numpy(first.kernel) - before).max())
  assert moved["crossgrad"] > 1e-3 and moved["keras"] == 0.0, moved


def check_all(out_path):
  """Every check above; the sampled masks go to ``out_path``."""
  check_op_and_keras_ops()
  check_layers()
  check_attention_mask(out_path)
  check_sparse_layers()
  check_framework_forms()
  check_straight_through_trains_what_keras_autodiff_would_not()


if __name__ == "__main__":
  check_all(sys.argv[1])
  print("ok", BACKEND)
