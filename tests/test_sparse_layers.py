"""The sparse convolution layers under Keras' TF backend (every backend: test_keras.py): the
functions' values (TF's and JAX's, from the same weights), trainable, compilable with a
reused rulebook."""

import jax
import jax.numpy as jnp
import keras
import numpy as np
import tensorflow as tf

import crossgrad as cg
from crossgrad import layers


def _dense(seed=0, shape=(12, 10, 2), fraction=0.2):
  rng = np.random.default_rng(seed)
  dense = np.zeros(shape, np.float32)
  active = rng.random(shape[:2]) < fraction
  dense[active] = rng.standard_normal((int(active.sum()), shape[2]))
  return dense


def _keras_net(x, book):
  conv = layers.SubmanifoldConv2D(4, 3, activation="relu", name="sub")
  down = layers.SparseConv2D(3, 2, strides=2, name="down")
  return conv, down, down(conv(x, rulebook=book))


def test_keras_layers_compute_the_functions_and_train():
  x = cg.SparseData.from_dense(tf.constant(_dense()))
  book = cg.sparse.submanifold_rulebook(x, 3)
  conv, down, y = _keras_net(x, book)
  want = cg.tensorflow.submanifold_conv2d(x, conv.kernel, conv.bias).map(tf.nn.relu)
  want = cg.tensorflow.sparse_conv2d(want, down.kernel, down.bias, 2, stride=2)
  assert y.dense_shape == (6, 5, 3) and y.n_valid == want.n_valid
  np.testing.assert_allclose(y.M.numpy(), want.M.numpy(), rtol=1e-6)
  np.testing.assert_allclose(y.ground_state.numpy(), want.ground_state.numpy(), rtol=1e-6)
  weights = conv.trainable_weights + down.trainable_weights
  assert [tuple(w.shape) for w in weights] == [(3, 3, 2, 4), (4,), (2, 2, 4, 3), (3,)]

  @tf.function(jit_compile=True, autograph=False)
  def grads(x, book):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(down(conv(x, rulebook=book)).M ** 2)
    return tape.gradient(loss, weights)

  assert all(float(tf.reduce_max(tf.abs(g))) > 0 for g in grads(x, book))
  config = layers.SparseConv2D.from_config(down.get_config()).get_config()
  assert (config["strides"], config["filters"], config["kernel_size"]) == (2, 3, 2)


def test_keras_layers_inside_a_model():
  class Net(keras.Model):
    def __init__(self):
      super().__init__()
      self.conv = layers.SubmanifoldConv2D(4, 3, activation="relu")
      self.head = keras.layers.Dense(2)

    def call(self, x):
      y = self.conv(x)
      return self.head(tf.reduce_sum(y.M, axis=0, keepdims=True))

  net = Net()
  out = net(x=cg.SparseData.from_dense(tf.constant(_dense(1))))
  assert out.shape == (1, 2) and len(net.trainable_weights) == 4


def test_jax_functions_match_the_keras_layers_from_the_same_weights():
  dense = _dense(2)
  x_tf = cg.SparseData.from_dense(tf.constant(dense))
  conv, down, want = _keras_net(x_tf, cg.sparse.submanifold_rulebook(x_tf, 3))
  params = [{"kernel": jnp.asarray(layer.kernel.numpy()), "bias": jnp.asarray(layer.bias.numpy())}
            for layer in (conv, down)]

  @jax.jit
  def forward(params, x):
    book = cg.sparse.submanifold_rulebook(x, 3)
    y = cg.jax.submanifold_conv2d(x, params[0]["kernel"], params[0]["bias"], rulebook=book)
    return cg.jax.sparse_conv2d(y.map(jax.nn.relu), params[1]["kernel"], params[1]["bias"], 2,
                                stride=2, capacity=30)

  x = cg.SparseData.from_dense(jnp.asarray(dense))
  got = forward(params, x)
  n = int(got.n_valid)
  assert n == want.n_valid
  np.testing.assert_array_equal(np.asarray(got.H)[:n], want.H.numpy())
  np.testing.assert_allclose(np.asarray(got.M)[:n], want.M.numpy(), rtol=1e-5, atol=1e-6)
  grads = jax.grad(lambda p: jnp.sum(forward(p, x).M ** 2))(params)
  assert all(float(jnp.abs(g).max()) > 0 for g in jax.tree_util.tree_leaves(grads))
