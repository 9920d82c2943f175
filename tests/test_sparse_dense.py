"""sparse_conv2d against dense convolutions of ``to_dense()``; SparseData; bad input.

The dense references are each framework's own convolution (`tf.nn.conv2d`,
`jax.lax.conv_general_dilated`) of the densified input: equal values everywhere
(active outputs and ground state), and equal gradients for M, ground_state, W, b.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg

F = 3


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _problem(seed, shape=(10, 12, 3), fraction=0.15, n_out=4, n2=2):
  rng = np.random.default_rng(seed)
  ground_state = rng.standard_normal(shape[2])
  dense = np.broadcast_to(ground_state, shape).copy()
  active = rng.random(shape[:2]) < fraction
  dense[active] = rng.standard_normal((int(active.sum()), shape[2]))
  weights = (rng.standard_normal((F, F, shape[2], n_out)), rng.standard_normal(n_out),
             rng.standard_normal((F, F, n_out, n2)), rng.standard_normal(n2))
  cotangent = rng.standard_normal((shape[0] - 2 * F + 2, shape[1] - 2 * F + 2, n2))
  return dense, ground_state, weights, cotangent


def _tf_dense(x, w, b):
  return tf.nn.conv2d(x[None], w, 1, "VALID")[0] + b


def _jax_dense(x, w, b):
  out = jax.lax.conv_general_dilated(x[None], w, (1, 1), "VALID",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
  return out[0] + b


def _tf_grads(sparse, dense, ground_state, weights, cotangent, jit):
  x = cg.SparseData.from_dense(dense, ground_state)
  capacities = (80, 90)
  variables = [tf.constant(v) for v in (x.M, ground_state, *weights)]

  def run(m, gs, w1, b1, w2, b2):
    with tf.GradientTape() as tape:
      tape.watch([m, gs, w1, b1, w2, b2])
      if sparse:
        s = cg.SparseData(x.H, m, x.dense_shape, gs, x.n_valid)
        s = cg.tensorflow.sparse_conv2d(s, w1, b1, F, capacity=capacities[0] if jit else None)
        s = cg.tensorflow.sparse_conv2d(s, w2, b2, F, capacity=capacities[1] if jit else None)
        out = s.to_dense()
      else:
        d = cg.SparseData(x.H, m, x.dense_shape, gs, x.n_valid).to_dense()
        out = _tf_dense(_tf_dense(d, w1, b1), w2, b2)
      loss = tf.reduce_sum(out * cotangent)
    return out, tape.gradient(loss, [m, gs, w1, b1, w2, b2])

  run = tf.function(run, jit_compile=True) if jit else run
  out, grads = run(*variables)
  return out.numpy(), [g.numpy() for g in grads]


def _jax_grads(sparse, dense, ground_state, weights, cotangent, jit):
  x = cg.SparseData.from_dense(dense, ground_state)

  def forward(m, gs, w1, b1, w2, b2):
    s = cg.SparseData(x.H, m, x.dense_shape, gs, x.n_valid)
    if sparse:
      s = cg.jax.sparse_conv2d(s, w1, b1, F, capacity=80 if jit else None)
      out = cg.jax.sparse_conv2d(s, w2, b2, F, capacity=90 if jit else None).to_dense()
    else:
      out = _jax_dense(_jax_dense(s.to_dense(), w1, b1), w2, b2)
    return jnp.sum(out * cotangent), out

  grad = jax.grad(forward, argnums=tuple(range(6)), has_aux=True)
  grad = jax.jit(grad) if jit else grad
  grads, out = grad(*(jnp.asarray(v) for v in (x.M, ground_state, *weights)))
  return np.asarray(out), [np.asarray(g) for g in grads]


@pytest.mark.parametrize("grads", [_tf_grads, _jax_grads], ids=["tensorflow", "jax"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_two_layers_match_the_dense_convolution(grads, jit):
  problem = _problem(3)
  got_out, got = grads(True, *problem, jit)
  want_out, want = grads(False, *problem, jit=False)
  np.testing.assert_allclose(got_out, want_out, rtol=1e-12, atol=1e-12)
  for name, g, w in zip(("M", "ground_state", "W1", "b1", "W2", "b2"), got, want):
    np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-11, err_msg=name)


def test_inactive_outputs_hold_the_next_ground_state():
  dense, ground_state, (w1, b1, _, _), _ = _problem(4)
  y = cg.numpy.sparse_conv2d(cg.SparseData.from_dense(dense, ground_state), w1, b1, F)
  want = np.einsum("c,hwco->o", ground_state, w1) + b1
  np.testing.assert_allclose(y.ground_state, want, rtol=1e-13)
  inactive = np.ones(y.dense_shape[:2], bool)
  inactive[tuple(np.asarray(y.H).T)] = False
  assert inactive.any()
  np.testing.assert_allclose(y.to_dense()[inactive], np.broadcast_to(want, (
      int(inactive.sum()), want.size)), rtol=1e-13)


@pytest.mark.parametrize("backend", ["numpy", "tensorflow", "jax"])
def test_from_dense_and_to_dense_round_trip(backend):
  dense, ground_state, _, _ = _problem(5)
  convert = {"numpy": np.asarray, "tensorflow": tf.constant, "jax": jnp.asarray}[backend]
  x = cg.SparseData.from_dense(convert(dense), convert(ground_state))
  want_sites = np.argwhere((dense != ground_state).any(-1))
  np.testing.assert_array_equal(np.asarray(x.H), want_sites)
  np.testing.assert_array_equal(np.asarray(x.M), dense[tuple(want_sites.T)])
  np.testing.assert_array_equal(np.asarray(x.to_dense()), dense)
  padded = cg.SparseData.from_dense(convert(dense), convert(ground_state), capacity=60)
  assert padded.n_valid == len(want_sites) and padded.capacity == 60
  np.testing.assert_array_equal(np.asarray(padded.H)[len(want_sites):], -1)
  np.testing.assert_array_equal(np.asarray(padded.to_dense()), dense)
  np.testing.assert_array_equal(np.asarray(padded.compact().H), want_sites)


def test_sparse_data_goes_through_jax_jit_and_tf_function():
  dense, ground_state, (w1, b1, _, _), _ = _problem(6)
  want = cg.numpy.sparse_conv2d(cg.SparseData.from_dense(dense, ground_state), w1, b1, F)
  layer = lambda d, g: cg.jax.sparse_conv2d(cg.SparseData.from_dense(d, g), w1, b1, F)
  got = jax.jit(layer)(jnp.asarray(dense), jnp.asarray(ground_state))
  assert int(got.n_valid) == want.n_valid and got.capacity >= want.n_valid
  np.testing.assert_allclose(np.asarray(got.to_dense()), want.to_dense(), rtol=1e-12)
  tf_layer = tf.function(lambda d, g: cg.tensorflow.sparse_conv2d(
      cg.SparseData.from_dense(d, g), tf.constant(w1), tf.constant(b1), F),
                         jit_compile=True)
  got = tf_layer(tf.constant(dense), tf.constant(ground_state))
  assert int(got.n_valid) == want.n_valid
  np.testing.assert_allclose(got.to_dense().numpy(), want.to_dense(), rtol=1e-12)


def _seed_sparse(backend="numpy"):
  convert = {"numpy": np.asarray, "tensorflow": tf.constant, "jax": jnp.asarray}[backend]
  h = convert(np.array([[0, 0], [2, 2], [2, 3]], np.int32))
  m = convert(np.array([[1.7, 0.7], [7.9, 0.9], [4.8, 0.8]]))
  return h, m, convert(np.zeros(2))


@pytest.mark.parametrize("backend", ["numpy", "tensorflow", "jax"])
@pytest.mark.parametrize("h,argument,problem", [
    ([[0, 0], [4, 2], [2, 3]], "H", "outside dense_shape"),
    ([[0, 0], [2, -1], [2, 3]], "H", "outside dense_shape"),
    ([[0, 0], [2, 3], [2, 3]], "H", "duplicate active site"),
])
def test_bad_sites_are_clear_errors(backend, h, argument, problem):
  _, m, gs = _seed_sparse(backend)
  convert = {"numpy": np.asarray, "tensorflow": tf.constant, "jax": jnp.asarray}[backend]
  with pytest.raises(cg.CrossgradError, match=problem) as e:
    cg.SparseData(convert(np.array(h, np.int32)), m, (4, 4, 2), gs)
  assert e.value.argument == argument and e.value.backend == backend


@pytest.mark.parametrize("backend", ["numpy", "tensorflow", "jax"])
def test_int64_sites_work_and_float_sites_are_errors(backend):
  h, m, gs = _seed_sparse(backend)
  convert = {"numpy": np.asarray, "tensorflow": tf.constant, "jax": jnp.asarray}[backend]
  wide = cg.SparseData(convert(np.asarray(h).astype(np.int64)), m, (4, 4, 2), gs)
  conv = getattr(cg, backend).sparse_conv2d
  got = conv(wide, convert(np.ones((2, 2, 2, 4))), convert(np.zeros(4)), 2)
  want = cg.numpy.sparse_conv2d(cg.SparseData(np.asarray(h), np.asarray(m), (4, 4, 2),
                                              np.zeros(2)), np.ones((2, 2, 2, 4)),
                                np.zeros(4), 2)
  np.testing.assert_array_equal(np.asarray(got.H), want.H)
  with pytest.raises(cg.CrossgradError, match="integer sites"):
    cg.SparseData(convert(np.asarray(h).astype(np.float64)), m, (4, 4, 2), gs)


@pytest.mark.parametrize("backend", ["numpy", "tensorflow", "jax"])
def test_wrong_channel_counts_are_clear_errors(backend):
  h, m, gs = _seed_sparse(backend)
  with pytest.raises(cg.CrossgradError, match="wrong channel count") as e:
    cg.SparseData(h, m, (4, 4, 3), gs)
  assert e.value.expected.startswith("3 channels")
  with pytest.raises(cg.CrossgradError, match="one value per channel"):
    cg.SparseData(h, m, (4, 4, 2), np.zeros(3))
  x = cg.SparseData(h, m, (4, 4, 2), gs)
  conv = getattr(cg, backend).sparse_conv2d
  with pytest.raises(cg.CrossgradError, match="kernel does not match") as e:
    conv(x, np.zeros((2, 2, 3, 4)), np.zeros(4), 2)
  assert e.value.op == "sparse_conv2d" and e.value.argument == "W"
  with pytest.raises(cg.CrossgradError, match="bias"):
    conv(x, np.zeros((2, 2, 2, 4)), np.zeros(5), 2)
  with pytest.raises(cg.CrossgradError, match="dtype differs") as e:
    conv(x, np.zeros((2, 2, 2, 4), np.float32), np.zeros(4), 2)
  assert e.value.argument == "W"
  with pytest.raises(cg.CrossgradError, match="exceed the capacity"):
    conv(x, np.zeros((2, 2, 2, 4)), np.zeros(4), 2, capacity=4)


def test_sparse_q_rejects_a_bad_rulebook():
  h, m, gs = _seed_sparse()
  dst = np.zeros((3, 4), np.int32)
  with pytest.raises(cg.CrossgradError, match="list the output sites") as e:
    cg.numpy.get("sparse_q")(m, gs, np.zeros((5, 2)), dst)
  assert e.value.op == "sparse_q" and e.value.argument == "input 'h_out'"
  with pytest.raises(cg.CrossgradError, match="one row of Q entries per row of M") as e:
    cg.numpy.get("sparse_q")(m, gs, h, np.zeros((2, 4), np.int32))
  assert e.value.argument == "input 'dst'" and e.value.actual == "int32[2, 4]"
  with pytest.raises(cg.CrossgradError, match="one value per channel"):
    cg.jax.get("sparse_q")(m, np.zeros(3), h, dst)


@pytest.mark.parametrize("backend,jit", [("numpy", False), ("tensorflow", False),
                                         ("tensorflow", True), ("jax", False), ("jax", True)])
def test_out_of_range_indices_behave_the_same_everywhere(backend, jit):
  """take reads zeros, segment_sum / segment_min drop rows (NumPy as the reference)."""
  x = np.arange(12.0).reshape(4, 3)
  idx = np.array([[0, 5], [-1, 3]], np.int32)
  ids = np.array([0, 2, -1, 7], np.int32)
  want = (np.array([[[0, 1, 2], [0, 0, 0]], [[0, 0, 0], [9, 10, 11]]], float),
          np.array([[0, 1, 2], [0, 0, 0], [3, 4, 5]], float),
          np.array([[0, 1, 2], [np.finfo(float).max] * 3, [3, 4, 5]]))
  xp = cg.backends.common.base.load(backend).xp

  def run(x):
    return xp.take(x, idx, axis=0), xp.segment_sum(x, ids, 3), xp.segment_min(x, ids, 3)

  if jit:
    run = jax.jit(run) if backend == "jax" else tf.function(run, jit_compile=True)
  for got, expected in zip(run(x), want):
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_too_small_capacity_under_jit_keeps_the_first_sites():
  h, m, gs = _seed_sparse("jax")
  w, b = np.ones((2, 2, 2, 4)), np.zeros(4)
  full = cg.numpy.sparse_conv2d(cg.SparseData(*map(np.asarray, (h, m)), (4, 4, 2),
                                              np.zeros(2)), w, b, 2)
  layer = jax.jit(lambda h, m, gs: cg.jax.sparse_conv2d(
      cg.SparseData(h, m, (4, 4, 2), gs), w, b, 2, capacity=3))
  got = layer(h, m, gs)
  assert int(got.n_valid) == 3 and full.n_valid == 5
  np.testing.assert_array_equal(np.asarray(got.H), full.H[:3])
  np.testing.assert_allclose(np.asarray(got.M), full.M[:3], rtol=1e-13)
