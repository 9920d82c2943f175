"""jax.custom_vjp and jax.custom_jvp definitions of the kinds JAX libraries hold:
gradient clipping, safe square roots, stable losses, a layer norm, a fake quantizer
(a realistic corpus for crossgrad-port: 10 definitions, one with a real backward bug)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

_EPS = 1e-5


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
  """Identity forward; the cotangent clipped to [lo, hi] on the way back."""
  return x


def clip_gradient_fwd(lo, hi, x):
  return x, None


def clip_gradient_bwd(lo, hi, _, g):
  return (jnp.clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@jax.custom_jvp
def safe_sqrt(x):
  """sqrt with a zero tangent at x <= 0 instead of inf."""
  return jnp.sqrt(jnp.maximum(x, 0.0))


@safe_sqrt.defjvp
def safe_sqrt_jvp(primals, tangents):
  (x,) = primals
  (x_dot,) = tangents
  y = safe_sqrt(x)
  safe_y = jnp.where(x > 0, y, 1.0)
  return y, jnp.where(x > 0, 0.5 / safe_y, 0.0) * x_dot


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def scaled_softplus(x, beta):
  """log(1 + exp(beta x)) / beta, stable for large |x|."""
  return jnp.logaddexp(beta * x, 0.0) / beta


@scaled_softplus.defjvp
def _scaled_softplus_jvp(beta, primals, tangents):
  (x,), (t,) = primals, tangents
  return scaled_softplus(x, beta), jax.nn.sigmoid(beta * x) * t


@jax.custom_jvp
def sincos(x):
  """Two outputs from one input."""
  return jnp.sin(x), jnp.cos(x)


@sincos.defjvp
def _sincos_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  s, c = sincos(x)
  return (s, c), (c * t, -s * t)


@jax.custom_vjp
def logsumexp(x):
  m = jnp.max(x, axis=-1, keepdims=True)
  return jnp.log(jnp.sum(jnp.exp(x - m), axis=-1)) + m[..., 0]


def _logsumexp_fwd(x):
  out = logsumexp(x)
  return out, (x, out)


def _logsumexp_bwd(res, g):
  x, out = res
  return (g[..., None] * jnp.exp(x - out[..., None]),)


logsumexp.defvjp(_logsumexp_fwd, _logsumexp_bwd)


@jax.custom_vjp
def softmax_cross_entropy(logits, labels):
  """Per-example cross entropy; the labels get no cotangent (None)."""
  return -jnp.sum(labels * jax.nn.log_softmax(logits, axis=-1), axis=-1)


def _xent_fwd(logits, labels):
  return softmax_cross_entropy(logits, labels), (jax.nn.softmax(logits, axis=-1), labels)


def _xent_bwd(res, g):
  probs, labels = res
  return g[:, None] * (probs - labels), None


softmax_cross_entropy.defvjp(_xent_fwd, _xent_bwd)


@jax.custom_vjp
def layer_norm(x, gamma, beta):
  mean = jnp.mean(x, axis=-1, keepdims=True)
  var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
  return (x - mean) * jax.lax.rsqrt(var + _EPS) * gamma + beta


def layer_norm_fwd(x, gamma, beta):
  mean = jnp.mean(x, axis=-1, keepdims=True)
  var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
  rstd = jax.lax.rsqrt(var + _EPS)
  xhat = (x - mean) * rstd
  return xhat * gamma + beta, (xhat, rstd, gamma)


def layer_norm_bwd(res, g):
  xhat, rstd, gamma = res
  dxhat = g * gamma
  dx = rstd * (dxhat - jnp.mean(dxhat, axis=-1, keepdims=True)
               - xhat * jnp.mean(dxhat * xhat, axis=-1, keepdims=True))
  return dx, jnp.sum(g * xhat, axis=0), jnp.sum(g, axis=0)


layer_norm.defvjp(layer_norm_fwd, layer_norm_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def swish(x, beta=1.0):
  return x * jax.nn.sigmoid(beta * x)


def _swish_fwd(x, beta):
  s = jax.nn.sigmoid(beta * x)
  return x * s, (x, s)


def _swish_bwd(beta, res, g):
  x, s = res
  return (g * (s + beta * x * s * (1 - s)),)


swish.defvjp(_swish_fwd, _swish_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def smooth_l1(pred, target, beta):
  """Smooth L1; the backward forgets to divide by beta in the quadratic branch (a bug)."""
  d = pred - target
  ad = jnp.abs(d)
  return jnp.where(ad < beta, 0.5 * d ** 2 / beta, ad - 0.5 * beta)


def _smooth_l1_fwd(pred, target, beta):
  return smooth_l1(pred, target, beta), pred - target


def _smooth_l1_bwd(beta, d, g):
  grad = jnp.where(jnp.abs(d) < beta, d, jnp.sign(d))
  return g * grad, -g * grad


smooth_l1.defvjp(_smooth_l1_fwd, _smooth_l1_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def fake_quant(x, scale, bits):
  qmax = 2.0 ** (bits - 1) - 1
  return jnp.clip(jnp.round(x / scale), -qmax - 1, qmax) * scale


def _fake_quant_fwd(x, scale, bits):
  return fake_quant(x, scale, bits), x


def _fake_quant_bwd(scale, bits, x, g):
  qmax = 2.0 ** (bits - 1) - 1
  keep = (x >= (-qmax - 1) * scale) & (x <= qmax * scale)
  return (jnp.where(keep, g, 0.0),)


fake_quant.defvjp(_fake_quant_fwd, _fake_quant_bwd)


def _floats(rng, *shape):
  return rng.standard_normal(shape).astype(np.float32)


def _one_hot(rng, rows, classes):
  return np.eye(classes, dtype=np.float32)[rng.integers(0, classes, size=rows)]


SAMPLES = {
    "clip_gradient": lambda rng: (-0.1, 0.1, _floats(rng, 3, 5)),
    "safe_sqrt": lambda rng: (np.abs(_floats(rng, 4, 3)) + 0.2,),
    "scaled_softplus": lambda rng: (_floats(rng, 2, 5), 2.0),
    "sincos": lambda rng: (_floats(rng, 6),),
    "logsumexp": lambda rng: (_floats(rng, 3, 7),),
    "softmax_cross_entropy": lambda rng: (_floats(rng, 4, 6), _one_hot(rng, 4, 6)),
    "layer_norm": lambda rng: (_floats(rng, 5, 4), 1 + 0.1 * _floats(rng, 4),
                               0.1 * _floats(rng, 4)),
    "swish": lambda rng: (_floats(rng, 3, 3), 1.5),
    "smooth_l1": lambda rng: (_floats(rng, 4, 5), _floats(rng, 4, 5), 2.0),
    "fake_quant": lambda rng: (_floats(rng, 4, 4), 0.1, 4),
}
GRADIENTS = {
    "clip_gradient": "surrogate", "safe_sqrt": "exact", "scaled_softplus": "exact",
    "sincos": "exact", "logsumexp": "exact", "softmax_cross_entropy": "exact",
    "layer_norm": "exact", "swish": "exact", "smooth_l1": "exact", "fake_quant": "surrogate",
}
