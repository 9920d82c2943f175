"""`bernoulli_mask`: forward and gradient formulas, finite differences, bad input, seeds."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.bernoulli import random_bits
from crossgrad.checker import finite_diff
from crossgrad.registry.ops import bernoulli_mask as bm

TF_MODES = ("eager", "graph", "jit")
JAX_MODES = ("eager", "jit")
SHAPES = {  # (p, features): broadcast over channels, equal shapes, features broadcast.
    "channels": ((2, 3, 4, 1), (2, 3, 4, 5)),
    "same": ((3, 6), (3, 6)),
    "features_broadcast": ((4, 3), (3,)),
}


def _inputs(shapes, dtype, seed=0):
  rng = np.random.default_rng(seed)
  p_shape, f_shape = shapes
  p = rng.uniform(0.0, 1.0, p_shape).astype(dtype)
  features = rng.standard_normal(f_shape).astype(dtype)
  u = rng.uniform(0.0, 1.0, p_shape).astype(dtype)
  out_shape = np.broadcast_shapes(p_shape, f_shape)
  g = rng.standard_normal(out_shape).astype(dtype)
  return p, features, u, g


def _expected(p, features, u, g):
  """The op's formulas, written directly in NumPy."""
  m = (u < p).astype(features.dtype)
  out = m * features
  full = np.broadcast_shapes(p.shape, features.shape)

  def reduce_to(x, shape):
    lead = len(full) - len(shape)
    x = x.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and x.shape[i] != 1)
    return x.sum(axis=axes, keepdims=True)

  return out, reduce_to(g * features, p.shape), reduce_to(g * m, features.shape)


def _tf(fn, mode):
  return fn if mode == "eager" else tf.function(fn, jit_compile=(mode == "jit"),
                                                autograph=False)


def _tf_vjp(fn, p, features, u, g):
  def run(p, features, u, g):
    with tf.GradientTape() as tape:
      tape.watch([p, features])
      out = fn(p, features, u)
    return (out,) + tuple(tape.gradient(out, [p, features], output_gradients=g))
  return run


def _jax_vjp(fn):
  def run(p, features, u, g):
    out, vjp = jax.vjp(lambda a, b: fn(a, b, u), p, features)
    return (out,) + vjp(g)
  return run


def _check(got, want, dtype):
  out, dp, dfeatures = (np.asarray(x) for x in got)
  np.testing.assert_array_equal(out, want[0])  # The forward is exact.
  np.testing.assert_array_equal(dfeatures, want[2])  # A product, no sum over channels.
  rtol = 1e-6 if dtype == "float32" else 1e-14
  np.testing.assert_allclose(dp, want[1], rtol=rtol, atol=rtol)
  for x, w in zip((out, dp, dfeatures), want):
    assert x.dtype == w.dtype and x.shape == w.shape


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("mode", TF_MODES)
def test_tensorflow_forward_and_gradients_match_formulas(mode, shapes, dtype):
  p, features, u, g = _inputs(shapes, dtype)
  run = _tf(_tf_vjp(cg.tensorflow.get("bernoulli_mask"), p, features, u, g), mode)
  got = run(*(tf.constant(x) for x in (p, features, u, g)))
  _check([x.numpy() for x in got], _expected(p, features, u, g), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("mode", JAX_MODES)
def test_jax_forward_and_gradients_match_formulas(mode, shapes, dtype):
  p, features, u, g = _inputs(shapes, dtype)
  run = _jax_vjp(cg.jax.get("bernoulli_mask"))
  with jax.enable_x64(dtype == "float64"):
    got = (jax.jit(run) if mode == "jit" else run)(p, features, u, g)
    _check(got, _expected(p, features, u, g), dtype)


def test_unknown_batch_size_under_tf_function():
  """Unknown sizes at trace time take the dynamic broadcast-reduction path."""
  p, features, u, g = _inputs(SHAPES["channels"], "float32")
  spec = lambda x: tf.TensorSpec((None,) + x.shape[1:], tf.float32)
  run = tf.function(_tf_vjp(cg.tensorflow.get("bernoulli_mask"), p, features, u, g),
                    input_signature=[spec(x) for x in (p, features, u, g)], autograph=False)
  got = run(*(tf.constant(x) for x in (p, features, u, g)))
  _check([x.numpy() for x in got], _expected(p, features, u, g), "float32")


def test_cross_check_passes():
  report = cg.cross_check(["bernoulli_mask"])
  assert report.ok, report.table()
  assert {r.backend for r in report.rows} == {"numpy", *base.default_backends()}


def _reference_vjp(op):
  def vjp(p, features, u, g):
    _, vjp_fn = cg.numpy.vjp(op, p, features, u)
    return vjp_fn(g)
  return vjp


def _fd_errors(op):
  """dp against the expectation p * features, dfeatures against the forward m * features."""
  p, features, u, _ = _inputs(SHAPES["channels"], "float64", seed=3)
  u = np.where(np.abs(u - p) < 0.05, (p + 0.5) % 1.0, u)  # Off the mask's jumps.
  vjp = _reference_vjp(op)
  rng = np.random.default_rng(0)
  err_p = finite_diff.vjp_error(
      lambda x: [x[0] * features], lambda x, c: [vjp(x[0], features, u, c[0])[0]], [p], rng).error
  m = (u < p).astype(np.float64)
  err_f = finite_diff.vjp_error(
      lambda x: [m * x[0]], lambda x, c: [vjp(p, x[0], u, c[0])[1]], [features], rng).error
  return err_p, err_f


def test_each_cotangent_is_the_derivative_of_its_function():
  err_p, err_f = _fd_errors(bm.BERNOULLI_MASK)
  assert err_p < finite_diff.TOLERANCE
  assert err_f < finite_diff.TOLERANCE


def test_planted_wrong_gradients_fail_the_finite_differences():
  def dp_wrong(xp, residuals, g):  # Averages over the broadcast axis instead of summing.
    _, features, m = residuals
    return xp.mean(g * features, axis=-1, keepdims=True), xp.unbroadcast(g * m, features), None

  def df_wrong(xp, residuals, g):  # Uses p in place of the sampled mask.
    p, features, _ = residuals
    return xp.unbroadcast(g * features, p), g * p, None

  ops = [dataclasses.replace(bm.BERNOULLI_MASK, name=f"wrong_{i}", backward=b)
         for i, b in enumerate((dp_wrong, df_wrong))]
  assert _fd_errors(ops[0])[0] > 1e-3
  assert _fd_errors(ops[1])[1] > 1e-3


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
@pytest.mark.parametrize("bad", ["above_one", "negative", "nan", "noise_one"])
def test_bad_values_raise_eagerly(backend, bad):
  p, features, u, _ = _inputs(SHAPES["channels"], "float32")
  p, u = p.copy(), u.copy()
  where, value = {"above_one": ("p", 1.5), "negative": ("p", -0.1), "nan": ("p", np.nan),
                  "noise_one": ("u", 1.0)}[bad]
  (p if where == "p" else u)[1, 2, 3, 0] = value
  module = getattr(cg, backend)
  with pytest.raises(cg.CrossgradError) as e:
    module.bernoulli_mask(p, features, u)
  assert (e.value.op, e.value.backend, e.value.argument) == (
      "bernoulli_mask", backend, f"input '{where}'")
  assert "(1, 2, 3, 0)" in e.value.actual
  if where == "p":
    with pytest.raises(cg.CrossgradError, match="input 'p'"):
      module.bernoulli_mask_sampled(p, features, 0)


def test_shapes_that_do_not_broadcast_fail_at_trace_time():
  p, features, u = np.full((2, 3), 0.5, np.float32), np.ones((2, 4), np.float32), \
      np.zeros((2, 3), np.float32)
  calls = [(cg.tensorflow.bernoulli_mask, "tensorflow")] + [
      (tf.function(cg.tensorflow.get("bernoulli_mask"), jit_compile=j, autograph=False),
       "tensorflow")
      for j in (False, True)] + [(cg.jax.bernoulli_mask, "jax"),
                                 (jax.jit(cg.jax.get("bernoulli_mask")), "jax")]
  for fn, backend in calls:
    with pytest.raises(cg.CrossgradError, match="do not broadcast") as e:
      fn(p, features, u)
    assert (e.value.backend, e.value.argument) == (backend, "input 'features'")
  with pytest.raises(cg.CrossgradError, match="noise must have the shape"):
    jax.jit(cg.jax.bernoulli_mask)(p, p, u[:, :2])
  with pytest.raises(cg.CrossgradError, match="dtype of input 'p'"):
    cg.tensorflow.bernoulli_mask(p, features[:, :3].astype(np.float64), u)


def test_under_jit_bad_probabilities_saturate():
  """Documented: traced code cannot check values; p >= 1 keeps, p <= 0 and NaN drop."""
  p = np.array([1.5, 1.0, -0.5, 0.0, np.nan], np.float32)
  features = np.arange(1.0, 6.0, dtype=np.float32)
  u = np.array([0.999, 0.999, 0.0, 0.0, 0.5], np.float32)
  g = np.ones(5, np.float32)
  want_out = np.array([1.0, 2.0, 0.0, 0.0, 0.0], np.float32)
  tf_run = tf.function(_tf_vjp(cg.tensorflow.bernoulli_mask, p, features, u, g),
                       jit_compile=True, autograph=False)
  for run in (lambda: [x.numpy() for x in tf_run(*map(tf.constant, (p, features, u, g)))],
              lambda: jax.jit(_jax_vjp(cg.jax.bernoulli_mask))(p, features, u, g)):
    out, dp, dfeatures = (np.asarray(x) for x in run())
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(dp, g * features)  # The surrogate ignores p's value.
    np.testing.assert_array_equal(dfeatures, (want_out != 0).astype(np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_noise_is_exact_in_its_dtype_and_below_one(dtype):
  for u in (cg.tensorflow.uniform_noise((4096,), 7, dtype).numpy(),
            np.asarray(cg.jax.uniform_noise(7, (4096,), dtype))):  # float32 without x64.
    scaled = u.astype(np.float64) * 2.0 ** random_bits.UNIFORM_BITS[str(u.dtype)]
    assert np.all((scaled >= 0) & (scaled < 2.0 ** random_bits.UNIFORM_BITS[str(u.dtype)]))
    np.testing.assert_array_equal(scaled, np.floor(scaled))
    assert len(np.unique(scaled)) > min(1000, 2 ** random_bits.UNIFORM_BITS[str(u.dtype)] // 2)


def test_tensorflow_same_seed_same_mask_in_every_mode():
  p = np.random.default_rng(1).uniform(size=(8, 16, 16, 1)).astype(np.float32)
  features = np.ones((8, 16, 16, 3), np.float32)
  masks = [_tf(cg.tensorflow.bernoulli_mask_sampled, mode)(p, features, tf.constant([5, 9]))
           for mode in TF_MODES]
  for m in masks[1:]:
    np.testing.assert_array_equal(m.numpy(), masks[0].numpy())
  other = cg.tensorflow.bernoulli_mask_sampled(p, features, tf.constant([5, 10])).numpy()
  assert np.mean(other != masks[0].numpy()) > 0.2


def test_jax_same_key_same_mask_eager_and_jit():
  p = np.random.default_rng(1).uniform(size=(8, 16, 16, 1)).astype(np.float32)
  features = np.ones((8, 16, 16, 3), np.float32)
  key = jax.random.key(5)
  eager = cg.jax.bernoulli_mask_sampled(p, features, key)
  jitted = jax.jit(cg.jax.bernoulli_mask_sampled)(p, features, key)
  np.testing.assert_array_equal(eager, jitted)
  np.testing.assert_array_equal(eager, cg.jax.bernoulli_mask_sampled(p, features, 5))
  other = cg.jax.bernoulli_mask_sampled(p, features, jax.random.key(6))
  assert np.mean(np.asarray(other) != np.asarray(eager)) > 0.2


def test_sampled_masks_keep_with_probability_p():
  n = 200_000
  for backend, sample in (("tensorflow", lambda p, f: cg.tensorflow.bernoulli_mask_sampled(
      p, f, 11).numpy()), ("jax", lambda p, f: np.asarray(
          cg.jax.bernoulli_mask_sampled(p, f, 11)))):
    for q in (0.0, 0.03, 0.5, 0.9, 1.0):
      kept = sample(np.full((n, 1), q, np.float32), np.ones((n, 2), np.float32))
      assert np.array_equal(kept[:, 0], kept[:, 1]), backend  # One draw per p entry.
      bound = 5 * np.sqrt(q * (1 - q) / n)
      assert abs(kept[:, 0].mean() - q) <= bound, (backend, q)


def test_sampled_gradients_use_the_drawn_mask():
  p = np.random.default_rng(2).uniform(size=(4, 5, 1)).astype(np.float32)
  features = np.random.default_rng(3).uniform(1.0, 2.0, (4, 5, 3)).astype(np.float32)
  g = np.random.default_rng(4).standard_normal((4, 5, 3)).astype(np.float32)
  tp, tf_ = tf.constant(p), tf.constant(features)
  with tf.GradientTape() as tape:
    tape.watch([tp, tf_])
    out = cg.tensorflow.bernoulli_mask_sampled(tp, tf_, 1)
  dp, dfeatures = tape.gradient(out, [tp, tf_], output_gradients=g)
  m = (out.numpy() != 0).astype(np.float32)
  np.testing.assert_allclose(dp.numpy(), np.sum(g * features, -1, keepdims=True), rtol=1e-6)
  np.testing.assert_array_equal(dfeatures.numpy(), g * m)
  out, vjp = jax.vjp(lambda a, b: cg.jax.bernoulli_mask_sampled(a, b, 1), p, features)
  dp, dfeatures = vjp(g)
  np.testing.assert_allclose(dp, np.sum(g * features, -1, keepdims=True), rtol=1e-6)
  np.testing.assert_array_equal(dfeatures, g * (np.asarray(out) != 0))
