"""Custom-gradient definitions in the JAX styles real code has (a test corpus for the porter)."""

import functools

import jax
import jax.numpy as jnp
from jax import lax
import numpy as np


@jax.custom_vjp
def log1pexp(x):
  """log(1 + e^x), with a backward that stays finite for large x."""
  return jnp.logaddexp(x, 0.0)


def _log1pexp_fwd(x):
  return log1pexp(x), (x,)


def _log1pexp_bwd(res, g):
  (x,) = res
  return (g * jax.nn.sigmoid(x),)


log1pexp.defvjp(_log1pexp_fwd, _log1pexp_bwd)


@jax.custom_vjp
def weighted_sq_dist(x, y, w):
  """sum over the last axis of w * (x - y)^2, for three inputs."""
  d = x - y
  return jnp.sum(w * d * d, axis=-1)


def weighted_sq_dist_fwd(x, y, w):
  d = x - y
  return jnp.sum(w * d * d, axis=-1), (d, w)


def weighted_sq_dist_bwd(res, g):
  d, w = res
  g = g[..., None]
  gx = 2.0 * g * w * d
  return gx, -gx, jnp.broadcast_to(g * d * d, w.shape)


weighted_sq_dist.defvjp(weighted_sq_dist_fwd, weighted_sq_dist_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def leaky_relu(x, alpha):
  return jnp.where(x > 0, x, alpha * x)


def leaky_relu_fwd(x, alpha):
  return leaky_relu(x, alpha), x


def leaky_relu_bwd(alpha, x, g):
  return (jnp.where(x > 0, g, alpha * g),)


leaky_relu.defvjp(leaky_relu_fwd, leaky_relu_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
  """Identity forward; the backward clips the cotangent to [lo, hi] (a surrogate)."""
  return x


def clip_gradient_fwd(lo, hi, x):
  return x, None


def clip_gradient_bwd(lo, hi, _, g):
  return (jnp.clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def _huber(x, delta):
  a = jnp.abs(x)
  return jnp.where(a <= delta, 0.5 * x * x, delta * (a - 0.5 * delta))


huber = jax.custom_vjp(_huber, nondiff_argnums=(1,))


def _huber_fwd(x, delta):
  return _huber(x, delta), x


def _huber_bwd(delta, x, g):
  return (g * jnp.clip(x, -delta, delta),)


huber.defvjp(_huber_fwd, _huber_bwd)


@jax.custom_vjp
def round_ste(x):
  """Rounding with a straight-through backward (the cotangent passes unchanged)."""
  return jnp.round(x)


def round_ste_fwd(x):
  return jnp.round(x), None


def round_ste_bwd(_, g):
  return (g,)


round_ste.defvjp(round_ste_fwd, round_ste_bwd)


@jax.custom_vjp
def scaled_tanh(x):
  """1.7159 * tanh(2x / 3); its backward forgets the square of tanh (a real bug)."""
  return 1.7159 * jnp.tanh(x * (2.0 / 3.0))


def scaled_tanh_fwd(x):
  t = jnp.tanh(x * (2.0 / 3.0))
  return 1.7159 * t, t


def scaled_tanh_bwd(t, g):
  return (g * 1.7159 * (2.0 / 3.0) * (1.0 - t),)


scaled_tanh.defvjp(scaled_tanh_fwd, scaled_tanh_bwd)


@jax.custom_vjp
def noisy_sign(x, key):
  """A sign with random tie breaking: randomness the op language cannot carry."""
  u = jax.random.uniform(key, x.shape)
  return jnp.where(x == 0, jnp.sign(u - 0.5), jnp.sign(x))


def noisy_sign_fwd(x, key):
  return noisy_sign(x, key), None


def noisy_sign_bwd(_, g):
  return g, None


noisy_sign.defvjp(noisy_sign_fwd, noisy_sign_bwd)


def _floats(rng, *shape):
  return rng.standard_normal(shape).astype(np.float32)


SAMPLES = {
    "log1pexp": lambda rng: (_floats(rng, 3, 4),),
    "weighted_sq_dist": lambda rng: (_floats(rng, 2, 5), _floats(rng, 2, 5),
                                     np.abs(_floats(rng, 2, 5)) + 0.5),
    "leaky_relu": lambda rng: (_floats(rng, 4, 3), 0.1),
    "clip_gradient": lambda rng: (-0.5, 0.5, _floats(rng, 6)),
    "huber": lambda rng: (_floats(rng, 4, 4) * 2, 1.0),
    "round_ste": lambda rng: (_floats(rng, 2, 4) * 3,),
    "scaled_tanh": lambda rng: (_floats(rng, 3, 3),),
    "noisy_sign": lambda rng: (_floats(rng, 4), jax.random.PRNGKey(0)),
}
GRADIENTS = {
    "log1pexp": "exact", "weighted_sq_dist": "exact", "leaky_relu": "exact", "huber": "exact",
    "clip_gradient": "surrogate", "round_ste": "surrogate", "scaled_tanh": "exact",
}
