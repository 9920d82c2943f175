"""Forward mode and second order from the one definition, in JAX and TensorFlow.

A JAX op is a `jax.custom_jvp` whose tangent is the transpose of the backward: forward
mode (jacfwd) must give the Jacobian reverse mode (jacrev, the backward) gives, surrogate
gradients included; reverse mode must compile to what a plain `jax.custom_vjp` of the same
definition compiles to. TensorFlow's `ForwardAccumulator` and nested tapes must agree.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad.benchmarks import handwritten, hlo
from crossgrad.registry import validation
from crossgrad.registry.ops import BUILTIN

CASES = [(op, op.resolve_params(p)) for op in BUILTIN for p in op.param_sets]
IDS = [f"{op.name}-{i}" for op in BUILTIN for i, _ in enumerate(op.param_sets)]


def _problem(op, seed=0):
  """float64 inputs; a function of the differentiable inputs only; its JAX op."""
  inputs = [np.asarray(x) for x in op.sample(np.random.default_rng(seed))]
  return inputs, [inputs[i] for i in op.diff_argnums]


def _of_diff(fn, op, inputs):
  def f(*moved):
    args = list(inputs)
    for i, x in zip(op.diff_argnums, moved):
      args[i] = x
    return fn(*args)
  return f


def _floating_outputs(f):
  """``f`` with only its floating outputs, as one flat vector (for Jacobians)."""
  def flat(*args):
    outs = [o for o in validation.as_tuple(f(*args)) if jnp.issubdtype(o.dtype, jnp.floating)]
    return jnp.concatenate([jnp.ravel(o) for o in outs])
  return flat


@pytest.mark.parametrize("op, params", CASES, ids=IDS)
def test_jacfwd_is_the_transpose_of_the_backward(op, params):
  inputs, diff = _problem(op)
  with jax.enable_x64(True):
    f = _floating_outputs(_of_diff(cg.jax.get(op, **params), op, inputs))
    argnums = tuple(range(len(diff)))
    forward = jax.jacfwd(f, argnums)(*diff)
    reverse = jax.jacrev(f, argnums)(*diff)
    for a, b in zip(forward, reverse):
      np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # ... and what the NumPy reference's backward gives, row by row.
    _, vjp_fn = cg.numpy.vjp(op, *inputs, **params)
    outputs = validation.as_tuple(cg.numpy.get(op, **params)(*inputs))
    row = np.zeros(sum(o.size for o in outputs if np.issubdtype(o.dtype, np.floating)))
    row[0] = 1.0
    g, start = [], 0
    for o in outputs:
      if np.issubdtype(o.dtype, np.floating):
        g.append(row[start:start + o.size].reshape(o.shape))
        start += o.size
      else:
        g.append(None)
    cts = vjp_fn(tuple(g) if len(outputs) > 1 else g[0])
    for jac, i in zip(forward, op.diff_argnums):
      np.testing.assert_allclose(np.asarray(jac)[0], cts[i], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op, params", CASES, ids=IDS)
def test_linearize_jvp_and_hessian_agree(op, params):
  inputs, diff = _problem(op, seed=1)
  rng = np.random.default_rng(2)
  tangents = [rng.standard_normal(x.shape) for x in diff]
  with jax.enable_x64(True):
    f = _floating_outputs(_of_diff(cg.jax.get(op, **params), op, inputs))
    _, by_jvp = jax.jvp(f, diff, tangents)
    _, linear = jax.linearize(f, *diff)
    np.testing.assert_allclose(linear(*tangents), by_jvp, rtol=1e-12, atol=1e-12)

    def scalar(*moved):  # A loss through the op: its Hessian differentiates the backward.
      return jnp.sum(jnp.sin(f(*moved)))

    argnums = tuple(range(len(diff)))
    fwd_over_rev = jax.hessian(scalar, argnums)(*diff)
    rev_over_rev = jax.jacrev(jax.jacrev(scalar, argnums), argnums)(*diff)
    for a_row, b_row in zip(fwd_over_rev, rev_over_rev):
      for a, b in zip(a_row, b_row):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(jax.jit(jax.grad(scalar, argnums))(*diff)[0],
                               jax.grad(scalar, argnums)(*diff)[0], rtol=1e-12)


def test_surrogates_stay_surrogates_in_forward_mode():
  x = jnp.array([0.3, -1.4, 2.6])
  _, tangent = jax.jvp(cg.jax.get("ste_quantize"), (x,), (jnp.ones(3),))
  np.testing.assert_array_equal(tangent, np.ones(3))  # Straight through, not round's 0.
  c, k, d = jnp.array([1.0, 2.0]), jnp.array([0.5, -1.0]), jnp.array([2.0, 3.0])
  tc, tk, td = jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]), jnp.array([1.0, 1.0])
  _, tangent = jax.jvp(cg.jax.get("custom_add"), (c, k, d), (tc, tk, td))
  # The seeds' backward ((c + k + d) g, d g, (c + k) g), transposed.
  np.testing.assert_allclose(tangent, (c + k + d) * tc + d * tk + (c + k) * td)


@pytest.mark.parametrize("backward, actual", [
    (lambda xp, r, g: (g * g,), "multiplies g by g"),
    (lambda xp, r, g: (xp.sign(g),), "JAX cannot transpose it"),
    (lambda xp, r, g: (xp.ones_like(r[0]),), "nonzero constant"),
    (lambda xp, r, g: (r[0] * 2.0,), "reads the residuals but not g"),
], ids=["square", "sign", "constant", "no_g"])
def test_a_backward_not_linear_in_g_is_an_error_naming_the_op(backward, actual):
  op = cg.OpDef("t_not_linear", lambda xp, x: (x * 2.0, (x,)), backward)
  fn = cg.jax.get(op)
  x = jnp.array([1.0, -2.0])
  for use in (lambda: jax.grad(lambda x: jnp.sum(fn(x)))(x),
              lambda: jax.jvp(fn, (x,), (x,))):
    with pytest.raises(cg.CrossgradError) as info:
      use()
    message = str(info.value)
    assert "op 't_not_linear' (jax)" in message and "not linear in the cotangent g" in message
    assert actual in message


def test_a_zero_cotangent_is_linear():
  op = cg.OpDef("t_zero_ct", lambda xp, x, y: (x * 2.0, (x,)),
                lambda xp, r, g: (2.0 * g, xp.zeros_like(r[0])))
  x = jnp.array([1.0, -2.0])
  _, tangent = jax.jvp(cg.jax.get(op), (x, x), (x, 10 * x))
  np.testing.assert_allclose(tangent, 2.0 * x)


@pytest.mark.parametrize("op, params", CASES, ids=IDS)
def test_reverse_mode_compiles_to_the_custom_vjp_program(op, params):
  rng = np.random.default_rng(0)
  baseline = handwritten.BASELINES.get(op.name)  # Its benchmark inputs, else the op's sample.
  inputs = baseline.inputs(2048, rng) if baseline else op.sample(rng)
  diff = op.diff_argnums

  def step(fn):
    def loss(moved):
      outs = validation.as_tuple(_of_diff(fn, op, inputs)(*moved))
      return sum(jnp.sum(jnp.sin(o)) for o in outs if jnp.issubdtype(o.dtype, jnp.floating))
    return jax.jit(jax.grad(loss)).lower([inputs[i] for i in diff]).compile().as_text()

  ours = hlo.summary(step(cg.jax.get(op, **params)))
  theirs = hlo.summary(step(handwritten.custom_vjp_of(op, params)))
  assert ours["signature"] == theirs["signature"], (ours["instructions"], theirs["instructions"])


@pytest.mark.parametrize("op, params", CASES, ids=IDS)
def test_tensorflow_forward_mode_and_second_order_agree_with_jax(op, params):
  inputs, diff = _problem(op, seed=3)
  rng = np.random.default_rng(4)
  tangents = [rng.standard_normal(x.shape) for x in diff]
  outputs = validation.as_tuple(cg.numpy.get(op, **params)(*inputs))
  g = [rng.standard_normal(o.shape) if np.issubdtype(o.dtype, np.floating) else None
       for o in outputs]
  with jax.enable_x64(True):
    f = _of_diff(cg.jax.get(op, **params), op, inputs)
    _, want_tangents = jax.jvp(f, diff, tangents)

    def inner(*moved):  # <vjp(g), tangents>: its gradient differentiates the backward.
      out, vjp_fn = jax.vjp(f, *moved)
      cts = vjp_fn(tuple(g) if isinstance(out, tuple) else g[0])
      return sum(jnp.vdot(c, t) for c, t in zip(cts, tangents))

    want_second = jax.grad(inner, tuple(range(len(diff))))(*diff)

  fn = cg.tensorflow.get(op, **params)

  def tf_both(args):
    moved = [args[i] for i in op.diff_argnums]
    with tf.autodiff.ForwardAccumulator(moved, [tf.constant(t) for t in tangents]) as acc:
      outs = validation.as_tuple(fn(*args))
    with tf.GradientTape() as outer:
      outer.watch(moved)
      with tf.GradientTape() as tape:
        tape.watch(moved)
        outs2 = validation.as_tuple(fn(*args))
      pairs = [(o, tf.constant(c)) for o, c in zip(outs2, g) if c is not None]
      cts = tape.gradient([p[0] for p in pairs], moved, output_gradients=[p[1] for p in pairs])
      total = tf.add_n([tf.reduce_sum(c * t) for c, t in zip(cts, tangents)])
    return ([acc.jvp(o) for o in outs if o.dtype.is_floating],
            outer.gradient(total, moved, unconnected_gradients=tf.UnconnectedGradients.ZERO))

  for wrap in (lambda f: f, tf.function):
    got_tangents, got_second = wrap(tf_both)([tf.constant(x) for x in inputs])
    want = [t for t in validation.as_tuple(want_tangents)
            if jnp.issubdtype(t.dtype, jnp.floating)]
    for a, b in zip(got_tangents, want):
      np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for a, b in zip(got_second, want_second):
      np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_tensorflow_forward_over_reverse_hessian_vector_product():
  """The textbook TF HVP: an accumulator around a tape; center_loss's residuals move with x."""
  op = cg.get("center_loss")
  x, y, c = op.sample(np.random.default_rng(5))
  v = np.random.default_rng(6).standard_normal(x.shape)
  fn = cg.tensorflow.get(op)
  xt = tf.constant(x)
  with tf.autodiff.ForwardAccumulator(xt, tf.constant(v)) as acc:
    with tf.GradientTape() as tape:
      tape.watch(xt)
      loss = fn(xt, tf.constant(y), tf.constant(c))
    grad = tape.gradient(loss, xt)
  # d/dx of g * (x - c[y]) is the identity: the HVP is v itself.
  np.testing.assert_allclose(acc.jvp(grad), v, rtol=1e-12)


@pytest.mark.parametrize("op, params", CASES, ids=IDS)
def test_hessian_vector_products_of_a_loss_agree_across_frameworks(op, params):
  """For sum(sin(outputs)): forward over reverse (H v) and reverse over reverse (H^T v) in
  JAX and in TF. The outer derivative of a surrogate op's outputs is the surrogate too
  (TF's tapes and accumulators use the custom gradient; JAX's tangent rule computes the
  outputs with the op itself). A surrogate with no potential (bernoulli_mask, custom_add,
  center_loss) has a non-symmetric H, so the two products differ; each must agree."""
  inputs, diff = _problem(op, seed=7)
  v = [np.random.default_rng(8).standard_normal(x.shape) for x in diff]
  with jax.enable_x64(True):
    f = _of_diff(cg.jax.get(op, **params), op, inputs)
    loss = lambda *moved: sum(jnp.sum(jnp.sin(o)) for o in validation.as_tuple(f(*moved))
                              if jnp.issubdtype(o.dtype, jnp.floating))
    argnums = tuple(range(len(diff)))
    fwd_rev = jax.jvp(lambda *d: jax.grad(loss, argnums)(*d), diff, v)[1]
    rev_rev = jax.grad(lambda *d: sum(jnp.vdot(g, t) for g, t in zip(
        jax.grad(loss, argnums)(*d), v)), argnums)(*diff)
  fn = cg.tensorflow.get(op, **params)
  args = [tf.constant(x) for x in inputs]
  moved = [args[i] for i in op.diff_argnums]

  def tf_grads():
    with tf.GradientTape() as tape:
      tape.watch(moved)
      total = tf.add_n([tf.reduce_sum(tf.sin(o)) for o in validation.as_tuple(fn(*args))
                        if o.dtype.is_floating])
    return tape.gradient(total, moved)

  with tf.autodiff.ForwardAccumulator(moved, [tf.constant(t) for t in v]) as acc:
    grads = tf_grads()
  tf_fwd_rev = [acc.jvp(g, unconnected_gradients=tf.UnconnectedGradients.ZERO) for g in grads]
  with tf.GradientTape() as outer:
    outer.watch(moved)
    along = tf.add_n([tf.reduce_sum(g * t) for g, t in zip(tf_grads(), v)])
  tf_rev_rev = outer.gradient(along, moved, unconnected_gradients=tf.UnconnectedGradients.ZERO)
  for jax_side, tf_side in ((fwd_rev, tf_fwd_rev), (rev_rev, tf_rev_rev)):
    for a, b in zip(jax_side, tf_side):
      np.testing.assert_allclose(a, b.numpy(), rtol=1e-9, atol=1e-12)
  if op.gradient == "exact" or op.name == "ste_quantize":  # A potential: H is symmetric.
    for a, b in zip(fwd_rev, rev_rev):
      np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
