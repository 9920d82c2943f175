"""Strided sparse_conv2d (the downsampling step) against dense strided VALID convolutions
of ``to_dense()``: values everywhere and all gradients, eager and jit; and its output
sites in the seed's first-appearance order (a loop over sites as the reference)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _problem(seed, f, stride, shape=(11, 10, 2), fraction=0.2, n_out=3):
  rng = np.random.default_rng(seed)
  ground_state = rng.standard_normal(shape[2])
  dense = np.broadcast_to(ground_state, shape).copy()
  active = rng.random(shape[:2]) < fraction
  dense[active] = rng.standard_normal((int(active.sum()), shape[2]))
  ho, wo = (shape[0] - f) // stride + 1, (shape[1] - f) // stride + 1
  return (dense, ground_state, rng.standard_normal((f, f, shape[2], n_out)),
          rng.standard_normal(n_out), rng.standard_normal((ho, wo, n_out)))


def _first_appearance(sites, shape, f, stride):
  order = {}
  for row, col in sites:
    for u in range(f - 1, -1, -1):
      for v in range(f - 1, -1, -1):
        i, j = row - u, col - v
        if i >= 0 and j >= 0 and i % stride == 0 and j % stride == 0:
          i, j = i // stride, j // stride
          if i <= (shape[0] - f) // stride and j <= (shape[1] - f) // stride:
            order.setdefault((i, j), len(order))
  return np.array(list(order), np.int32).reshape(-1, 2)


@pytest.mark.parametrize("f,stride", [(2, 2), (3, 2), (3, 3), (2, 3)])
def test_output_sites_in_first_appearance_order(f, stride):
  dense, ground_state, w, b, _ = _problem(f + stride, f, stride)
  x = cg.SparseData.from_dense(dense, ground_state)
  y = cg.numpy.sparse_conv2d(x, w, b, f, stride=stride)
  np.testing.assert_array_equal(y.H, _first_appearance(np.asarray(x.H), dense.shape, f, stride))


def _run(framework, sparse, f, stride, jit, problem):
  dense, ground_state, w, b, cotangent = problem
  x = cg.SparseData.from_dense(dense, ground_state, capacity=40 if jit else None)
  capacity = 30 if jit else None
  if framework == "tensorflow":
    def run(m, gs, w, b):
      with tf.GradientTape() as tape:
        tape.watch([m, gs, w, b])
        s = cg.SparseData(x.H, m, x.dense_shape, gs, x.n_valid)
        if sparse:
          out = cg.tensorflow.sparse_conv2d(s, w, b, f, stride=stride,
                                            capacity=capacity).to_dense()
        else:
          out = tf.nn.conv2d(s.to_dense()[None], w, stride, "VALID")[0] + b
        loss = tf.reduce_sum(out * cotangent)
      return out, tape.gradient(loss, [m, gs, w, b])
    run = tf.function(run, jit_compile=True, autograph=False) if jit else run
    out, grads = run(*(tf.constant(v) for v in (x.M, ground_state, w, b)))
    return out.numpy(), [g.numpy() for g in grads]

  def loss(m, gs, w, b):
    s = cg.SparseData(x.H, m, x.dense_shape, gs, x.n_valid)
    if sparse:
      out = cg.jax.sparse_conv2d(s, w, b, f, stride=stride, capacity=capacity).to_dense()
    else:
      out = jax.lax.conv_general_dilated(s.to_dense()[None], w, (stride, stride), "VALID",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))[0] + b
    return jnp.sum(out * cotangent), out
  grad = jax.grad(loss, (0, 1, 2, 3), has_aux=True)
  grads, out = (jax.jit(grad) if jit else grad)(
      *(jnp.asarray(v) for v in (x.M, ground_state, w, b)))
  return np.asarray(out), [np.asarray(g) for g in grads]


@pytest.mark.parametrize("framework", ["tensorflow", "jax"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("f,stride", [(2, 2), (3, 2)])
def test_strided_layer_matches_the_dense_strided_convolution(framework, jit, f, stride):
  problem = _problem(7, f, stride)
  got_out, got = _run(framework, True, f, stride, jit, problem)
  want_out, want = _run(framework, False, f, stride, False, problem)
  np.testing.assert_allclose(got_out, want_out, rtol=1e-12, atol=1e-12)
  for name, g, w in zip(("M", "ground_state", "W", "b"), got, want):
    np.testing.assert_allclose(g[:len(w)], w, rtol=1e-11, atol=1e-11, err_msg=name)
