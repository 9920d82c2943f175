"""The built-in ops written by hand with `tf.custom_gradient` and `jax.custom_vjp`: the
baselines the benchmarks compare crossgrad against.

One `Baseline` per registry op: adding an op to the benchmarks is one entry in
`BASELINES`. Each baseline is what a user would write without crossgrad: the same forward
and backward formulas, directly in TensorFlow and jax.numpy, with no validation (torch's
are in `handwritten_torch`). `STE_SIGN`, the sign straight-through estimator of
larq and BinaryNet, is an op of the benchmarks only (not in the registry).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import tensorflow as tf

from crossgrad.registry.opdef import OpDef

FEATURES = 64  # Width of the matrix-shaped ops' inputs; rows = elements / FEATURES.
CLASSES = 10  # center_loss's number of centers.


@dataclasses.dataclass(frozen=True)
class Baseline:
  """A registry op and its hand-written versions.

  Attributes:
    op: the registry name (or the `OpDef` of an op outside the registry).
    tensorflow: the op with `tf.custom_gradient`, same positional inputs as the op.
    jax: the op with `jax.custom_vjp`.
    inputs: ``inputs(elements, rng)``: float32 (and integer) NumPy inputs whose main
      input has ``elements`` elements (rounded to whole rows for matrix ops).
    params: static parameters the crossgrad op is built with (the defaults here).
  """

  op: str | OpDef
  tensorflow: Callable[..., Any]
  jax: Callable[..., Any]
  inputs: Callable[[int, np.random.Generator], tuple[np.ndarray, ...]]
  params: dict = dataclasses.field(default_factory=dict)


def _vector(elements, rng):
  return (rng.standard_normal(elements, dtype=np.float32),)


def _rows(elements):
  return max(1, math.ceil(elements / FEATURES))


# leaky_relu: where(x > 0, x, 0.2 x).
@tf.custom_gradient
def tf_leaky_relu(x):
  return tf.where(x > 0, x, 0.2 * x), lambda g: tf.where(x > 0, g, 0.2 * g)


@jax.custom_vjp
def jax_leaky_relu(x):
  return jnp.where(x > 0, x, 0.2 * x)


jax_leaky_relu.defvjp(lambda x: (jax_leaky_relu(x), x),
                      lambda x, g: (jnp.where(x > 0, g, 0.2 * g),))


# custom_add: c + k with the seeds' gradient ((c + k + d) g, d g, (c + k) g).
@tf.custom_gradient
def tf_custom_add(c, k, d):
  e = c + k
  return e, lambda g: ((e + d) * g, d * g, e * g)


def _add_bwd(res, g):
  e, d = res
  return (e + d) * g, d * g, e * g


jax_custom_add = jax.custom_vjp(lambda c, k, d: c + k)
jax_custom_add.defvjp(lambda c, k, d: (c + k, (c + k, d)), _add_bwd)


def _three(elements, rng):
  return tuple(rng.standard_normal(elements, dtype=np.float32) for _ in range(3))


# ste_quantize: round(x / scale) * scale (scale = 1), straight-through gradient.
@tf.custom_gradient
def tf_ste_quantize(x):
  return tf.round(x * 1.0) * 1.0, lambda g: g


jax_ste_quantize = jax.custom_vjp(lambda x: jnp.round(x * 1.0) * 1.0)
jax_ste_quantize.defvjp(lambda x: (jnp.round(x * 1.0) * 1.0, None), lambda _, g: (g,))


# ste_sign: sign(x), gradient g where |x| <= 1 (larq's ste_sign, BinaryNet's estimator).
def _ste_sign_forward(xp, x):
  return xp.sign(x), (x,)


def _ste_sign_backward(xp, residuals, g):
  (x,) = residuals
  return (g * xp.astype(xp.abs(x) <= 1.0, g.dtype),)


STE_SIGN = OpDef(
    name="ste_sign", forward=_ste_sign_forward, backward=_ste_sign_backward,
    gradient="surrogate", surrogate=lambda xp, x: xp.clip(x, -1.0, 1.0),
    sample=lambda rng: (rng.standard_normal((8, 10)) * 2.0,),
    doc="sign(x), straight-through gradient where |x| <= 1")


@tf.custom_gradient
def tf_ste_sign(x):
  return tf.sign(x), lambda g: g * tf.cast(tf.abs(x) <= 1.0, g.dtype)


jax_ste_sign = jax.custom_vjp(jnp.sign)
jax_ste_sign.defvjp(lambda x: (jnp.sign(x), x),
                    lambda x, g: (g * (jnp.abs(x) <= 1.0).astype(g.dtype),))


# center_loss: 1/2 sum ||x_i - c[y_i]||^2; dx = g (x - c[y]), dc = the paper's update.
@tf.custom_gradient
def tf_center_loss(x, y, c):
  one_hot = tf.one_hot(y, c.shape[0], dtype=x.dtype)
  diff = x - tf.matmul(one_hot, c)

  def grad(g):
    counts = tf.reduce_sum(one_hot, axis=0)
    delta_c = tf.matmul(one_hot, -diff, transpose_a=True) / (1.0 + counts)[:, None]
    return g * diff, None, g * delta_c

  return 0.5 * tf.reduce_sum(tf.square(diff)), grad


def _center_fwd(x, y, c):
  one_hot = jax.nn.one_hot(y, c.shape[0], dtype=x.dtype)
  diff = x - one_hot @ c
  return 0.5 * jnp.sum(jnp.square(diff)), (diff, one_hot, y)


def _center_bwd(res, g):
  diff, one_hot, y = res
  counts = jnp.sum(one_hot, axis=0)
  delta_c = (one_hot.T @ -diff) / (1.0 + counts)[:, None]
  return g * diff, np.zeros(y.shape, jax.dtypes.float0), g * delta_c


jax_center_loss = jax.custom_vjp(lambda x, y, c: _center_fwd(x, y, c)[0])
jax_center_loss.defvjp(_center_fwd, _center_bwd)


def _center_inputs(elements, rng):
  m = _rows(elements)
  return (rng.standard_normal((m, FEATURES), dtype=np.float32),
          rng.integers(0, CLASSES, m, dtype=np.int32),
          rng.standard_normal((CLASSES, FEATURES), dtype=np.float32))


# positive_matmul: x @ relu(w)^T; dx = g @ relu(w), dw = g^T x where w > 0.
@tf.custom_gradient
def tf_positive_matmul(x, w):
  positive = w > 0
  w_pos = tf.where(positive, w, tf.zeros_like(w))

  def grad(g):
    dw = tf.matmul(g, x, transpose_a=True)
    return tf.matmul(g, w_pos), tf.where(positive, dw, tf.zeros_like(dw))

  return tf.matmul(x, w_pos, transpose_b=True), grad


def _pm_fwd(x, w):
  positive = w > 0
  w_pos = jnp.where(positive, w, 0.0)
  return x @ w_pos.T, (x, w_pos, positive)


def _pm_bwd(res, g):
  x, w_pos, positive = res
  return g @ w_pos, jnp.where(positive, g.T @ x, 0.0)


jax_positive_matmul = jax.custom_vjp(lambda x, w: _pm_fwd(x, w)[0])
jax_positive_matmul.defvjp(_pm_fwd, _pm_bwd)


def _matmul_inputs(elements, rng):
  return (rng.standard_normal((_rows(elements), FEATURES), dtype=np.float32),
          rng.standard_normal((FEATURES, FEATURES), dtype=np.float32))


# bernoulli_mask: (u < p) * features as the op defines it, a select (a dropped element is
# exactly 0, whatever its feature: the seed's multiply by the mask would give inf * 0 =
# NaN); dp = g * features summed over the broadcast channel axis, dfeatures = g where the
# mask keeps. p and u are (rows, 1) against features (rows, FEATURES).
@tf.custom_gradient
def tf_bernoulli_mask(p, features, u):
  keep = u < p

  def grad(g):
    return tf.reduce_sum(g * features, axis=1, keepdims=True), tf.where(keep, g, 0.0), None

  return tf.where(keep, features, 0.0), grad


def _bernoulli_fwd(p, features, u):
  keep = u < p
  return jnp.where(keep, features, 0.0), (features, keep)


def _bernoulli_bwd(res, g):
  features, keep = res
  return jnp.sum(g * features, axis=1, keepdims=True), jnp.where(keep, g, 0.0), None


jax_bernoulli_mask = jax.custom_vjp(lambda p, features, u: _bernoulli_fwd(p, features, u)[0])
jax_bernoulli_mask.defvjp(_bernoulli_fwd, _bernoulli_bwd)


def _bernoulli_inputs(elements, rng):
  rows = _rows(elements)
  return (rng.uniform(size=(rows, 1)).astype(np.float32),
          rng.standard_normal((rows, FEATURES), dtype=np.float32),
          rng.uniform(size=(rows, 1)).astype(np.float32))


# sparse_q: Q = the ground state on live rows (h_out >= 0), with each row of M copied to
# the Q entries dst names (flattened rows * f*f entries; -1 none); its transpose is a
# gather of dQ by dst, and d ground_state the live total minus the active parts.
SPARSE_CHANNELS, SPARSE_OFFSETS = 4, 9  # n_in, f * f with f = 3.


@tf.custom_gradient
def tf_sparse_q(m, ground_state, h_out, dst):
  (a, n_in), rows, kk = m.shape, h_out.shape[0], dst.shape[1]
  entries = tf.reshape(dst, (-1,))
  copies = tf.reshape(tf.tile(m[:, None], (1, kk, 1)), (-1, n_in))
  landed = tf.math.unsorted_segment_sum(copies, entries, rows * kk)
  count = tf.math.unsorted_segment_sum(tf.ones_like(entries, m.dtype), entries, rows * kk)
  live = h_out[:, :1] >= 0
  weight = tf.reshape(tf.cast(live, m.dtype) - tf.reshape(count, (rows, kk)), (-1, 1))
  q = tf.reshape(landed + weight * ground_state, (rows, kk * n_in))

  def grad(g):
    # tf.where, not a multiply by a mask, as the op: an entry of -1 and a padding row
    # read an exact zero even where dQ holds inf or NaN.
    picked = tf.gather(tf.reshape(g, (-1, n_in)), tf.maximum(entries, 0))
    picked = tf.where(entries[:, None] >= 0, picked, tf.zeros_like(picked))
    d_m = tf.reduce_sum(tf.reshape(picked, (a, kk, n_in)), 1)
    total = tf.reduce_sum(tf.reshape(tf.reduce_sum(tf.where(live, g, 0.0), 0), (kk, n_in)), 0)
    return d_m, total - tf.reduce_sum(d_m, 0), None, None

  return q, grad


def _sparse_fwd(m, ground_state, h_out, dst):
  (a, n_in), rows, kk = m.shape, h_out.shape[0], dst.shape[1]
  entries = jnp.where(dst < 0, rows * kk, dst).reshape(-1)  # Out of range: dropped.
  landed = jnp.zeros((rows * kk, n_in), m.dtype).at[entries].add(jnp.repeat(m, kk, 0))
  count = jnp.zeros(rows * kk, m.dtype).at[entries].add(1)
  live = h_out[:, :1] >= 0
  weight = (live.astype(m.dtype) - count.reshape(rows, kk)).reshape(-1, 1)
  q = (landed + weight * ground_state).reshape(rows, kk * n_in)
  return q, (entries, live, a)


def _sparse_bwd(res, g):
  entries, live, a = res
  kk = entries.size // a
  n_in = g.shape[1] // kk
  d_m = jnp.asarray(g).reshape(-1, n_in).at[entries].get(mode="fill", fill_value=0)
  d_m = d_m.reshape(a, kk, n_in).sum(1)
  total = jnp.sum(jnp.where(live, g, 0.0), 0).reshape(kk, n_in).sum(0)
  return d_m, total - d_m.sum(0), None, None


jax_sparse_q = jax.custom_vjp(
    lambda m, ground_state, h_out, dst: _sparse_fwd(m, ground_state, h_out, dst)[0])
jax_sparse_q.defvjp(_sparse_fwd, _sparse_bwd)


def _sparse_inputs(elements, rng):
  """M with ``elements`` values; a random rulebook-like dst: one output row per active
  site, each filter offset a permutation of the sites (each Q entry fed at most once,
  as in a real rulebook), a fifth of the entries left to the ground state and a tenth of
  the rows padding."""
  a = max(1, elements // SPARSE_CHANNELS)
  rows = np.stack([rng.permutation(a) for _ in range(SPARSE_OFFSETS)], 1)
  dst = (rows * SPARSE_OFFSETS + np.arange(SPARSE_OFFSETS)).astype(np.int32)
  dst[rng.uniform(size=dst.shape) < 0.2] = -1
  h_out = np.zeros((a, 2), np.int32)
  padding = rng.uniform(size=a) < 0.1
  h_out[padding] = -1
  dst[padding[rows]] = -1  # Nothing lands on padding rows.
  return (rng.standard_normal((a, SPARSE_CHANNELS), dtype=np.float32),
          rng.standard_normal(SPARSE_CHANNELS, dtype=np.float32), h_out, dst)


def custom_vjp_of(op: Any, params: dict) -> Callable[..., Any]:
  """The op's own forward and backward (in the JAX backend's ``xp``) as a plain
  `jax.custom_vjp`, with no validation: an op with reverse mode only. Reverse mode
  through the crossgrad op (a `jax.custom_jvp`) must compile to this same program."""
  from crossgrad.backends import jax as jax_backend  # pylint: disable=g-import-not-at-top
  xp = jax_backend.xp

  @jax.custom_vjp
  def fn(*inputs):
    return op.forward(xp, *inputs, **params)[0]

  def fwd(*inputs):
    outputs, residuals = op.forward(xp, *inputs, **params)
    return outputs, residuals

  def bwd(residuals, g):
    return tuple(op.backward(xp, residuals, g, **params))

  fn.defvjp(fwd, bwd)
  return fn


BASELINES = {getattr(b.op, "name", b.op): b for b in (
    Baseline("bernoulli_mask", tf_bernoulli_mask, jax_bernoulli_mask, _bernoulli_inputs),
    Baseline("center_loss", tf_center_loss, jax_center_loss, _center_inputs),
    Baseline("custom_add", tf_custom_add, jax_custom_add, _three),
    Baseline("leaky_relu", tf_leaky_relu, jax_leaky_relu, _vector),
    Baseline("positive_matmul", tf_positive_matmul, jax_positive_matmul, _matmul_inputs),
    Baseline("sparse_q", tf_sparse_q, jax_sparse_q, _sparse_inputs),
    Baseline("ste_quantize", tf_ste_quantize, jax_ste_quantize, _vector),
    Baseline(STE_SIGN, tf_ste_sign, jax_ste_sign, _vector),
)}
