"""submanifold_conv2d against a dense SAME convolution of ``to_dense()``, read at the sites.

The references are each framework's own convolution (`tf.nn.conv2d`,
`lax.conv_general_dilated`, NumPy windows) with zero padding, of the densified input
(the ground state at inactive sites); the next ground state is a VALID convolution of an
``f x f`` image of the ground state. Values and the gradients of M, ground_state, W and b
through two layers, eagerly and compiled, with padding rows under jit.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad.sparse import rulebook

F = 3


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _problem(seed, shape=(9, 11, 3), fraction=0.3, channels=(4, 2), f=F):
  rng = np.random.default_rng(seed)
  ground_state = rng.standard_normal(shape[2])
  dense = np.broadcast_to(ground_state, shape).copy()
  active = rng.random(shape[:2]) < fraction
  active[0, 0] = active[-1, -1] = True  # Corner sites read outside the image.
  dense[active] = rng.standard_normal((int(active.sum()), shape[2]))
  weights, n_in = [], shape[2]
  for n_out in channels:
    weights += [rng.standard_normal((f, f, n_in, n_out)), rng.standard_normal(n_out)]
    n_in = n_out
  x = cg.SparseData.from_dense(dense, ground_state)
  cotangents = (rng.standard_normal((x.n_valid, channels[-1])),
                rng.standard_normal(channels[-1]))
  return dense, ground_state, weights, cotangents


def _numpy_same(x, w, b):
  c = (w.shape[0] - 1) // 2
  padded = np.pad(x, ((c, c), (c, c), (0, 0)))
  windows = np.lib.stride_tricks.sliding_window_view(padded, w.shape[:2], axis=(0, 1))
  return np.einsum("hwcij,ijco->hwo", windows, w) + b


def test_numpy_values_are_the_dense_same_convolution_at_the_sites():
  dense, ground_state, (w1, b1, _, _), _ = _problem(0)
  x = cg.SparseData.from_dense(dense, ground_state, capacity=60)
  y = cg.numpy.submanifold_conv2d(x, w1, b1)
  sites = np.asarray(x.H)[:x.n_valid]
  want = _numpy_same(dense, w1, b1)[sites[:, 0], sites[:, 1]]
  np.testing.assert_allclose(y.M[:x.n_valid], want, rtol=1e-12, atol=1e-12)
  assert (y.M[x.n_valid:] == 0).all() and y.n_valid == x.n_valid and y.H is x.H
  ground = np.broadcast_to(ground_state, (F, F, 3)).copy()
  np.testing.assert_allclose(y.ground_state, np.einsum("ijc,ijco->o", ground, w1) + b1,
                             rtol=1e-12)


def _tf_run(sparse, dense, ground_state, weights, cotangents, jit):
  x = cg.SparseData.from_dense(dense, ground_state, capacity=70 if jit else None)
  sites = np.asarray(x.H)[:x.n_valid]

  def run(m, gs, *params):
    with tf.GradientTape() as tape:
      tape.watch([m, gs, *params])
      s = cg.SparseData(x.H, m, x.dense_shape, gs, x.n_valid)
      if sparse:
        for w, b in zip(params[::2], params[1::2]):
          s = cg.tensorflow.submanifold_conv2d(s, w, b)
        out, ground = s.M[:x.n_valid], s.ground_state
      else:
        d, ground = s.to_dense(), gs
        inactive = tf.constant(np.all(dense == ground_state, axis=-1)[..., None])
        for w, b in zip(params[::2], params[1::2]):
          d = tf.nn.conv2d(d[None], w, 1, "SAME")[0] + b
          ground = tf.nn.conv2d(tf.broadcast_to(ground, (1, F, F, ground.shape[0])), w, 1,
                                "VALID")[0, 0, 0] + b
          d = tf.where(inactive, ground, d)
        out = tf.gather_nd(d, sites)
      loss = tf.reduce_sum(out * cotangents[0]) + tf.reduce_sum(ground * cotangents[1])
    return out, ground, tape.gradient(loss, [m, gs, *params])

  run = tf.function(run, jit_compile=True, autograph=False) if jit else run
  out, ground, grads = run(*(tf.constant(v) for v in (x.M, ground_state, *weights)))
  return out.numpy(), ground.numpy(), [g.numpy() for g in grads]


def _jax_run(sparse, dense, ground_state, weights, cotangents, jit):
  x = cg.SparseData.from_dense(dense, ground_state, capacity=70 if jit else None)
  sites = np.asarray(x.H)[:x.n_valid]
  inactive = np.all(dense == ground_state, axis=-1)[..., None]

  def conv(d, w, padding):
    return jax.lax.conv_general_dilated(d[None], w, (1, 1), padding,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))[0]

  def forward(m, gs, *params):
    s = cg.SparseData(x.H, m, x.dense_shape, gs, x.n_valid)
    if sparse:
      for w, b in zip(params[::2], params[1::2]):
        s = cg.jax.submanifold_conv2d(s, w, b)
      out, ground = s.M[:x.n_valid], s.ground_state
    else:
      d, ground = s.to_dense(), gs
      for w, b in zip(params[::2], params[1::2]):
        ground = conv(jnp.broadcast_to(ground, (F, F, ground.shape[0])), w, "VALID")[0, 0] + b
        d = jnp.where(inactive, ground, conv(d, w, "SAME") + b)
      out = d[sites[:, 0], sites[:, 1]]
    loss = jnp.sum(out * cotangents[0]) + jnp.sum(ground * cotangents[1])
    return loss, (out, ground)

  grad = jax.grad(forward, argnums=tuple(range(2 + len(weights))), has_aux=True)
  grad = jax.jit(grad) if jit else grad
  grads, (out, ground) = grad(*(jnp.asarray(v) for v in (x.M, ground_state, *weights)))
  return np.asarray(out), np.asarray(ground), [np.asarray(g) for g in grads]


@pytest.mark.parametrize("run", [_tf_run, _jax_run], ids=["tensorflow", "jax"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_two_layers_match_the_dense_same_convolution(run, jit):
  problem = _problem(1)
  got_out, got_ground, got = run(True, *problem, jit)
  want_out, want_ground, want = run(False, *problem, jit=False)
  np.testing.assert_allclose(got_out, want_out, rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(got_ground, want_ground, rtol=1e-12, atol=1e-12)
  names = ("M", "ground_state", "W1", "b1", "W2", "b2")
  for name, g, w in zip(names, got, want):
    assert np.abs(w).max() > 0, name
    np.testing.assert_allclose(g[:len(w)], w, rtol=1e-11, atol=1e-11, err_msg=name)
  if jit:  # Padding rows of M get no gradient.
    assert (got[0][len(want[0]):] == 0).all()


def test_numpy_vjp_of_the_op_gives_the_dense_gradient():
  """One layer's gradient assembled from cg.numpy.vjp('submanifold_q') equals JAX's
  autodiff of the dense SAME convolution."""
  dense, ground_state, (w1, b1, _, _), _ = _problem(2)
  x = cg.SparseData.from_dense(dense, ground_state)
  rng = np.random.default_rng(3)
  g_out = rng.standard_normal((x.n_valid, 4))
  book = cg.sparse.submanifold_rulebook(x, F)
  _, vjp = cg.numpy.vjp("submanifold_q", x.M, x.ground_state, book.dst)
  d_m, d_ground, none = vjp(g_out @ w1.reshape(-1, 4).T)
  assert none is None
  sites = np.asarray(x.H)

  def dense_loss(m, gs):
    d = cg.SparseData(jnp.asarray(x.H), m, x.dense_shape, gs, x.n_valid).to_dense()
    out = jax.lax.conv_general_dilated(d[None], w1, (1, 1), "SAME",
                                       dimension_numbers=("NHWC", "HWIO", "NHWC"))[0]
    return jnp.sum(out[sites[:, 0], sites[:, 1]] * g_out)

  want_m, want_ground = jax.grad(dense_loss, (0, 1))(jnp.asarray(x.M), jnp.asarray(ground_state))
  np.testing.assert_allclose(d_m, want_m, rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(d_ground, want_ground, rtol=1e-12, atol=1e-12)


def test_submanifold_q_passes_the_cross_check():
  report = cg.cross_check(["submanifold_q"])
  assert report.ok, report.table()


@pytest.mark.parametrize("f", [1, 3, 5])
def test_rulebook_is_the_neighbour_table(f):
  dense, ground_state, _, _ = _problem(4, shape=(7, 8, 2), fraction=0.4, f=f)
  x = cg.SparseData.from_dense(dense, ground_state, capacity=40)
  book = rulebook.build_submanifold(cg.numpy.xp, x.H, x.n_valid, x.dense_shape, f)
  rows = {tuple(site): r for r, site in enumerate(np.asarray(x.H)[:x.n_valid])}
  c = (f - 1) // 2
  want = np.full((40, f * f), -1)
  for (i, j), r in rows.items():
    for k in range(f * f):
      u, v = i + k // f - c, j + k % f - c
      if 0 <= u < 7 and 0 <= v < 8:
        want[r, k] = rows.get((u, v), 40)
  np.testing.assert_array_equal(book.dst, want)


def test_a_network_stays_as_sparse_as_its_input():
  dense, ground_state, _, _ = _problem(5, shape=(16, 16, 2), fraction=0.05)
  x = cg.SparseData.from_dense(jnp.asarray(dense), jnp.asarray(ground_state))
  book = cg.sparse.submanifold_rulebook(x, F)
  y = x
  for n_out in (4, 4, 4):
    y = cg.jax.submanifold_conv2d(y, jnp.ones((F, F, y.dense_shape[2], n_out)),
                                  jnp.zeros(n_out), rulebook=book).map(jax.nn.relu)
  assert y.n_valid == x.n_valid and y.capacity == x.capacity
  np.testing.assert_array_equal(np.asarray(y.H), np.asarray(x.H))
  dilated = cg.jax.sparse_conv2d(x, jnp.ones((F, F, 2, 4)), jnp.zeros(4), F)
  assert dilated.n_valid > 2 * x.n_valid


@pytest.mark.parametrize("backend", ["numpy", "tensorflow", "jax"])
def test_even_kernels_and_bad_tables_are_clear_errors(backend):
  convert = {"numpy": np.asarray, "tensorflow": tf.constant, "jax": jnp.asarray}[backend]
  dense, ground_state, (w1, b1, _, _), _ = _problem(6)
  x = cg.SparseData.from_dense(convert(dense), convert(ground_state))
  layer = getattr(cg, backend).submanifold_conv2d
  with pytest.raises(cg.CrossgradError, match="odd f") as e:
    layer(x, convert(w1[:2, :2]), convert(b1))
  assert (e.value.op, e.value.backend, e.value.argument) == ("submanifold_conv2d", backend, "W")
  with pytest.raises(cg.CrossgradError, match="bias") as e:
    layer(x, convert(w1), convert(np.zeros(5)))
  book = cg.sparse.submanifold_rulebook(x, F)
  src = np.array(book.dst)
  src[0, F * F // 2] = 1  # Row 0's centre is row 1, but row 1's centre is row 1.
  with pytest.raises(cg.CrossgradError, match="not its own inverse") as e:
    cg.backends.common.base.load(backend).get("submanifold_q")(x.M, x.ground_state, convert(src))
  assert e.value.argument == "input 'src'" and e.value.backend == backend


def test_torch_values_and_gradients_match_torch_conv2d():
  import torch  # pylint: disable=g-import-not-at-top
  dense, ground_state, (w1, b1, _, _), _ = _problem(7)
  x = cg.SparseData.from_dense(torch.tensor(dense), torch.tensor(ground_state))
  sites = np.asarray(x.H)
  cot = np.random.default_rng(8).standard_normal((x.n_valid, 4))

  def grads(sparse):
    m, gs = x.M.clone().requires_grad_(True), x.ground_state.clone().requires_grad_(True)
    w, b = torch.tensor(w1, requires_grad=True), torch.tensor(b1, requires_grad=True)
    s = cg.SparseData(x.H, m, x.dense_shape, gs, x.n_valid)
    if sparse:
      out = cg.torch.submanifold_conv2d(s, w, b).M
    else:
      d = s.to_dense().permute(2, 0, 1)[None]
      full = torch.nn.functional.conv2d(d, w.permute(3, 2, 0, 1), b, padding=F // 2)[0]
      out = full.permute(1, 2, 0)[sites[:, 0], sites[:, 1]]
    (out * torch.tensor(cot)).sum().backward()
    return [out.detach().numpy()] + [v.grad.numpy() for v in (m, gs, w, b)]

  for name, got, want in zip(("out", "M", "ground_state", "W", "b"), grads(True), grads(False)):
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11, err_msg=name)
