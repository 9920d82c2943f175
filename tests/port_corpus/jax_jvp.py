"""`jax.custom_jvp` definitions, written as JAX libraries write them (a porter test corpus)."""

import jax
from jax import custom_jvp
import jax.numpy as jnp
import numpy as np


@custom_jvp
def safe_log1p_exp(x):
  return jnp.log1p(jnp.exp(-jnp.abs(x))) + jnp.maximum(x, 0.0)


@safe_log1p_exp.defjvp
def _safe_log1p_exp_jvp(primals, tangents):
  (x,), (x_dot,) = primals, tangents
  y = safe_log1p_exp(x)
  return y, jax.nn.sigmoid(x) * x_dot


@custom_jvp
def sin_times(x, y):
  return jnp.sin(x) * y


@sin_times.defjvp
def sin_times_jvp(primals, tangents):
  x, y = primals
  x_dot, y_dot = tangents
  primal_out = sin_times(x, y)
  tangent_out = jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
  return primal_out, tangent_out


@custom_jvp
def soft_clip(x):
  """tanh squashing whose tangent is passed through unchanged (straight-through)."""
  return jnp.tanh(x)


@soft_clip.defjvp
def soft_clip_jvp(primals, tangents):
  (x,) = primals
  (t,) = tangents
  return soft_clip(x), t


def _floats(rng, *shape):
  return rng.standard_normal(shape).astype(np.float32)


SAMPLES = {
    "safe_log1p_exp": lambda rng: (_floats(rng, 5, 2),),
    "sin_times": lambda rng: (_floats(rng, 3, 2), _floats(rng, 3, 2)),
    "soft_clip": lambda rng: (_floats(rng, 7),),
}
GRADIENTS = {"safe_log1p_exp": "exact", "sin_times": "exact", "soft_clip": "surrogate"}
