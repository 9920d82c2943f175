"""Sparse convolution (seed 001): rulebook, sparse_q, SparseData and sparse_conv2d.

References: the seed's loop algorithm (`crossgrad.benchmarks.sparse_loops`), finite
differences of the NumPy forward, and dense convolutions of ``to_dense()`` in the same
framework.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad.benchmarks import sparse_loops
from crossgrad.registry.opdef import OpDef
from crossgrad.sparse import rulebook

SEED_DENSE = np.array([
    [[1.7, 0.7], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
    [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
    [[0.0, 0.0], [0.0, 0.0], [7.9, 0.9], [4.8, 0.8]],
    [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]])
BACKENDS = ("numpy", "tensorflow", "jax", "torch")


def _seed_weights():
  rng = np.random.default_rng(1)
  return rng.random((2, 2, 2, 4)), rng.random(4), rng.random((2, 2, 4, 8)), rng.random(8)


def _random_dense(rng, shape, fraction):
  ground_state = rng.standard_normal(shape[2])
  dense = np.broadcast_to(ground_state, shape).copy()
  active = rng.random(shape[:2]) < fraction
  dense[active] = rng.standard_normal((int(active.sum()), shape[2]))
  return dense, ground_state


def _convert(backend, x):
  if backend == "torch":
    import torch  # pylint: disable=g-import-not-at-top
    return torch.as_tensor(x)
  if backend == "tensorflow":
    return tf.constant(x)
  if backend == "jax":
    return jnp.asarray(x)
  return np.asarray(x)


def _two_layers(backend, m, ground_state, h, weights, capacities=(None, None)):
  w1, b1, w2, b2 = (_convert(backend, w) for w in weights)
  conv = getattr(cg, backend).sparse_conv2d
  x = cg.SparseData(h, m, SEED_DENSE.shape, ground_state)
  y = conv(x, w1, b1, 2, capacity=capacities[0])
  return y, conv(y, w2, b2, 2, capacity=capacities[1])


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_example_gives_5_then_4_sites(backend):
  x = cg.SparseData.from_dense(_convert(backend, SEED_DENSE))
  y, z = _two_layers(backend, x.M, x.ground_state, x.H, _seed_weights())
  assert (x.n_valid, y.n_valid, z.n_valid) == (3, 5, 4)
  want_h1, want_q1 = sparse_loops.build_q(np.asarray(x.H), np.asarray(x.M), (4, 4, 2), 2,
                                          np.zeros(2))
  np.testing.assert_array_equal(np.asarray(y.H), want_h1)
  np.testing.assert_array_equal(np.asarray(y.H), [[0, 0], [1, 1], [1, 2], [2, 1], [2, 2]])
  np.testing.assert_array_equal(np.asarray(z.H), [[0, 0], [0, 1], [1, 0], [1, 1]])
  w1, b1, _, _ = _seed_weights()
  np.testing.assert_allclose(np.asarray(y.M), want_q1 @ w1.reshape(8, 4) + b1, rtol=1e-13)


def _loop_reference(dense, ground_state, f):
  x = cg.SparseData.from_dense(dense, ground_state)
  return x, sparse_loops.build_q(x.H, x.M, dense.shape, f, ground_state)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f,fraction", [(1, 0.3), (2, 0.1), (3, 0.25), (5, 0.05)])
def test_rulebook_and_q_match_the_seed_loops(backend, f, fraction):
  rng = np.random.default_rng(f)
  dense, ground_state = _random_dense(rng, (11, 9, 3), fraction)
  x, (want_h, want_q) = _loop_reference(dense, ground_state, f)
  xp = cg.backends.common.base.load(backend).xp
  h = _convert(backend, x.H)
  book = rulebook.build(xp, h, x.n_valid, x.dense_shape, f,
                        rulebook.safe_capacity(x.capacity, x.dense_shape, f))
  n = int(book.n_out)
  assert n == len(want_h)
  np.testing.assert_array_equal(np.asarray(book.h_out)[:n], want_h)
  assert (np.asarray(book.h_out)[n:] == -1).all()
  q = cg.backends.common.base.load(backend).get("sparse_q")(
      _convert(backend, x.M), _convert(backend, ground_state), book.h_out, book.dst)
  np.testing.assert_array_equal(np.asarray(q)[:n], want_q)
  assert (np.asarray(q)[n:] == 0).all()


def test_sparse_q_backward_matches_the_seed_loops():
  rng = np.random.default_rng(7)
  dense, ground_state = _random_dense(rng, (8, 10, 2), 0.2)
  x, (_, want_q) = _loop_reference(dense, ground_state, 3)
  dq = rng.standard_normal(want_q.shape)
  want_dm, want_dt = sparse_loops.grad_q(dq, x.H, x.M, dense.shape, 3)
  book = rulebook.build(cg.numpy.xp, x.H, x.n_valid, x.dense_shape, 3, len(want_q))
  _, vjp = cg.numpy.vjp("sparse_q", x.M, ground_state, book.h_out, book.dst)
  dm, dt, *nones = vjp(dq)
  assert nones == [None, None]
  np.testing.assert_allclose(dm, want_dm, rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(dt, want_dt, rtol=1e-12, atol=1e-12)


def test_sparse_q_passes_the_cross_check():
  report = cg.cross_check(["sparse_q"])
  assert report.ok, report.table()


def test_planted_wrong_ground_state_gradient_fails_the_finite_differences():
  real = cg.get("sparse_q")

  def backward(xp, residuals, g):  # Every dQ entry counted as ground state.
    d_m, _, *nones = real.backward(xp, residuals, g)
    return (d_m, xp.sum(xp.reshape(g, (-1, d_m.shape[1])), axis=0), *nones)

  planted = OpDef(name="sparse_q_planted", forward=real.forward, backward=backward,
                  sample=real.sample, nondiff=("h_out", "dst"))
  rows = cg.cross_check([planted], backends=())
  assert not rows.ok
  failing = [r.check for r in rows.rows if not r.ok]  # The sample's fd row, then variants'.
  assert failing[0] == "fd" and set(failing[1:]) <= {"variant"}


def _fd_jacobian(fn, x, step=1e-3):
  """Central differences; the layers are affine in (M, ground_state), so exact bar rounding."""
  columns = []
  for k in range(x.size):
    e = np.zeros(x.size)
    e[k] = step
    columns.append((fn(x + e.reshape(x.shape)) - fn(x - e.reshape(x.shape))) / (2 * step))
  return np.stack(columns, -1)


def _numpy_layers(m, ground_state, which):
  x = cg.SparseData.from_dense(SEED_DENSE)
  y, z = _two_layers("numpy", m, ground_state, x.H, _seed_weights())
  return np.concatenate([np.ravel(getattr(v, a)) for v in (y, z) for a in which])


@pytest.mark.parametrize("backend, jit", [("tensorflow", False), ("tensorflow", True),
                                          ("jax", False), ("jax", True), ("torch", False)])
def test_two_layer_gradients_match_finite_differences(backend, jit):
  """Seed 001's check: d(M1, t1, M2, t2) / d(M0, t0) through two layers, float64."""
  x = cg.SparseData.from_dense(SEED_DENSE)
  caps = (9, 4) if jit else (None, None)  # Under jit layer 1 keeps 4 padding rows.
  xp = cg.backends.common.base.load(backend).xp

  def outputs(m, ground_state):
    y, z = _two_layers(backend, m, ground_state, x.H, _seed_weights(), caps)
    parts = [xp.reshape(v, (-1,)) for v in (y.M, y.ground_state, z.M, z.ground_state)]
    return parts

  if backend == "torch":
    import torch  # pylint: disable=g-import-not-at-top
    jac_m, jac_gs = torch.autograd.functional.jacobian(
        lambda m, gs: torch.cat(outputs(m, gs)), (torch.as_tensor(x.M),
                                                  torch.as_tensor(x.ground_state)))
  elif backend == "jax":
    jac = jax.jacrev(lambda m, gs: jnp.concatenate(outputs(m, gs)), argnums=(0, 1))
    jac = jax.jit(jac) if jit else jac
    jac_m, jac_gs = jac(jnp.asarray(x.M), jnp.asarray(x.ground_state))
  else:
    def jac(m, gs):
      with tf.GradientTape(persistent=True) as tape:
        tape.watch([m, gs])
        out = tf.concat(outputs(m, gs), 0)
      return tape.jacobian(out, m), tape.jacobian(out, gs)
    jac = tf.function(jac, jit_compile=True) if jit else jac
    jac_m, jac_gs = jac(tf.constant(x.M), tf.constant(x.ground_state))
  which = ("M", "ground_state")
  want_m = _fd_jacobian(lambda v: _numpy_layers(v, x.ground_state, which), x.M)
  want_gs = _fd_jacobian(lambda v: _numpy_layers(x.M, v, which), x.ground_state)
  for got, want in ((jac_m, want_m), (jac_gs, want_gs)):
    got = np.asarray(got).reshape(-1, *want.shape[1:])
    if jit:  # Rows 5..8 of layer 1 are padding: zero, and without gradient.
      assert not got[5 * 4:9 * 4].any()
      got = np.concatenate([got[:5 * 4], got[9 * 4:]])
    err = np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want)))
    assert err <= 1e-10, err


def test_sparse_q_gradient_is_exact_for_any_dst():
  """Repeated, out-of-range and negative Q entries: the forward adds or drops them (with
  ground-state weight 1 - count) and the backward is still its derivative, in every
  backend (finite differences)."""
  rng = np.random.default_rng(3)
  m, ground = rng.standard_normal((3, 2)), rng.standard_normal(2)
  h_out = np.array([[0, 0], [0, 1], [-1, -1]], np.int32)  # Two output rows, one padding.
  dst = np.array([[0, 5, 1, -1], [0, 12, 7, 3], [11, 2, 2, 40]], np.int32)
  report = cg.cross_check(["sparse_q"], inputs=[m, ground, h_out, dst])
  assert report.ok, report.table()
  q = cg.numpy.get("sparse_q")(m, ground, h_out, dst).reshape(3, 4, 2)
  np.testing.assert_allclose(q[0, 0], m[0] + m[1] - ground)  # Two rows land on entry 0.
  np.testing.assert_allclose(q[0, 2], m[2] + m[2] - ground)
  np.testing.assert_array_equal(q[1, 0], ground)  # Nothing lands on entry 4.
  np.testing.assert_array_equal(q[2, :3], np.zeros((3, 2)))  # Padding; 12, 40 are outside.
  np.testing.assert_allclose(q[2, 3], m[2] - ground)  # Entry 11 is on the padding row.
