"""A rulebook built once serves many layers: same results, in and out of jit, and clear
errors when it meets another active set or another kind of layer."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg

CONVERT = {"numpy": np.asarray, "tensorflow": tf.constant, "jax": jnp.asarray}


def _data(backend, seed=0, shape=(10, 9, 2), fraction=0.25, capacity=None):
  rng = np.random.default_rng(seed)
  dense = np.zeros(shape, np.float32)
  active = rng.random(shape[:2]) < fraction
  dense[active] = rng.standard_normal((int(active.sum()), shape[2]))
  return cg.SparseData.from_dense(CONVERT[backend](dense), capacity=capacity)


def _weights(backend, f, n_in, n_out, seed=1):
  rng = np.random.default_rng(seed)
  return (CONVERT[backend](rng.standard_normal((f, f, n_in, n_out)).astype(np.float32)),
          CONVERT[backend](rng.standard_normal(n_out).astype(np.float32)))


def _layers(backend):
  return getattr(cg, backend)


@pytest.mark.parametrize("backend", ["numpy", "tensorflow", "jax"])
def test_reused_rulebooks_give_the_same_layers(backend):
  x, module = _data(backend), _layers(backend)
  sub = cg.sparse.submanifold_rulebook(x, 3)
  conv = cg.sparse.conv_rulebook(x, 3)
  down = cg.sparse.conv_rulebook(x, 2, stride=2)
  for w, b in (_weights(backend, 3, 2, 4, seed) for seed in (1, 2)):
    pairs = [(module.submanifold_conv2d(x, w, b), module.submanifold_conv2d(x, w, b,
                                                                             rulebook=sub)),
             (module.sparse_conv2d(x, w, b, 3), module.sparse_conv2d(x, w, b, 3, rulebook=conv))]
    for fresh, reused in pairs:
      assert reused.n_valid == fresh.n_valid and reused.dense_shape == fresh.dense_shape
      np.testing.assert_array_equal(np.asarray(reused.H), np.asarray(fresh.H))
      np.testing.assert_array_equal(np.asarray(reused.M), np.asarray(fresh.M))
  w, b = _weights(backend, 2, 2, 3)
  fresh, reused = module.sparse_conv2d(x, w, b, 2, stride=2), module.sparse_conv2d(
      x, w, b, 2, stride=2, rulebook=down)
  np.testing.assert_array_equal(np.asarray(reused.to_dense()), np.asarray(fresh.to_dense()))


def test_jax_rulebook_is_a_pytree_built_outside_or_inside_jit():
  x = _data("jax", capacity=40)
  w, b = _weights("jax", 3, 2, 4)
  want = cg.jax.submanifold_conv2d(x, w, b)
  book = cg.sparse.submanifold_rulebook(x, 3)

  @jax.jit
  def passed_in(x, book):
    return cg.jax.submanifold_conv2d(x, w, b, rulebook=book).M

  @jax.jit
  def built_inside(x):
    inside = cg.sparse.submanifold_rulebook(x, 3)
    y = cg.jax.submanifold_conv2d(x, w, b, rulebook=inside)
    return cg.jax.submanifold_conv2d(y.map(jax.nn.relu), jnp.ones((3, 3, 4, 1)), jnp.zeros(1),
                                     rulebook=inside).M

  np.testing.assert_allclose(passed_in(x, book), want.M, rtol=1e-5, atol=1e-6)
  second = cg.jax.submanifold_conv2d(want.map(jax.nn.relu), jnp.ones((3, 3, 4, 1)),
                                     jnp.zeros(1))
  np.testing.assert_allclose(built_inside(x), second.M, rtol=1e-5, atol=1e-5)
  conv_book = cg.sparse.conv_rulebook(x, 3)
  leaves, tree = jax.tree_util.tree_flatten(conv_book)
  assert len(leaves) == 5 and jax.tree_util.tree_unflatten(tree, leaves).f == 3


def test_tensorflow_rulebook_goes_into_a_compiled_function():
  x = _data("tensorflow", capacity=40)
  w, b = _weights("tensorflow", 3, 2, 4)
  book = cg.sparse.conv_rulebook(x, 3, capacity=90)
  want = cg.tensorflow.sparse_conv2d(x, w, b, 3, capacity=90)
  layer = tf.function(lambda x, book: cg.tensorflow.sparse_conv2d(x, w, b, 3, rulebook=book).M,
                      jit_compile=True, autograph=False)
  np.testing.assert_allclose(layer(x, book).numpy(), want.M.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "tensorflow", "jax"])
def test_a_rulebook_for_another_active_set_is_a_clear_error(backend):
  x, module = _data(backend, capacity=40), _layers(backend)
  w, b = _weights(backend, 3, 2, 4)
  sub = cg.sparse.submanifold_rulebook(x, 3)
  cases = [
      (_data(backend, shape=(10, 8, 2), capacity=40), "another active set's shape"),
      (_data(backend, capacity=41), "another active set's capacity"),
      (_data(backend, seed=5, capacity=40), "another active set:"),
  ]
  for other, problem in cases:
    for call in (lambda y: module.submanifold_conv2d(y, w, b, rulebook=sub),
                 lambda y: module.sparse_conv2d(y, w, b, 3,
                                                rulebook=cg.sparse.conv_rulebook(x, 3))):
      with pytest.raises(cg.CrossgradError, match="rulebook was built for " + problem) as e:
        call(other)
      assert e.value.backend == backend and e.value.argument == "rulebook"
      assert e.value.op in ("submanifold_conv2d", "sparse_conv2d")


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_a_rulebook_for_another_layer_is_a_clear_error(backend):
  x, module = _data(backend), _layers(backend)
  w, b = _weights(backend, 3, 2, 4)
  with pytest.raises(cg.CrossgradError, match="another kind of layer") as e:
    module.sparse_conv2d(x, w, b, 3, rulebook=cg.sparse.submanifold_rulebook(x, 3))
  assert (e.value.op, e.value.argument) == ("sparse_conv2d", "rulebook")
  assert e.value.expected == "sparse (f=3, stride=1)" and e.value.actual == "submanifold"
  with pytest.raises(cg.CrossgradError, match="another kind of layer") as e:
    module.submanifold_conv2d(x, w, b, rulebook=cg.sparse.submanifold_rulebook(x, 5))
  with pytest.raises(cg.CrossgradError, match="another kind of layer") as e:
    module.sparse_conv2d(x, w, b, 3, stride=2, rulebook=cg.sparse.conv_rulebook(x, 3))
  assert e.value.actual == "sparse (f=3, stride=1)"
  book = cg.sparse.conv_rulebook(x, 3, capacity=80)
  with pytest.raises(cg.CrossgradError, match="capacity differs") as e:
    module.sparse_conv2d(x, w, b, 3, capacity=70, rulebook=book)
  with pytest.raises(cg.CrossgradError, match="bad filter size") as e:
    cg.sparse.submanifold_rulebook(x, 4)
  assert (e.value.op, e.value.argument) == ("submanifold_rulebook", "f")
  with pytest.raises(cg.CrossgradError, match="bad stride") as e:
    cg.sparse.conv_rulebook(x, 2, stride=0)
  with pytest.raises(cg.CrossgradError, match="must be a Rulebook"):
    module.submanifold_conv2d(x, w, b, rulebook=book.dst)
