"""A held-back set of ten mistakes that are right on their op's one sample and wrong on
inputs the forward takes, each beside its correct version (`tests/test_variants_heldback.py`).

``MISTAKES[name] = (forward, correct backward, mistaken backward, sample, the input the
diagnosis must name)``; samples are fixed, as users write them.
"""

import numpy as np


def _bias_tanh(xp, x, b):
  y = xp.tanh(x + b)
  return y, (y, x, b)


def _row_scale(xp, x, s):
  return x * s[:, None], (x, s)


def _gain(xp, x, w):
  return x * w, (x, w)


def _mse(xp, x, t):
  d = x - t
  return xp.mean(d * d), (d, x, t)


def _l2_normalize(xp, x):
  n = xp.sqrt(xp.sum(x * x, axis=-1, keepdims=True))
  return x / n, (x / n, n)


def _l2_normalize_backward(axis):
  def backward(xp, r, g):
    y, n = r
    return ((g - y * xp.sum(g * y, axis=axis, keepdims=True)) / n,)
  return backward


def _softmax(xp, x):
  e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
  y = e / xp.sum(e, axis=-1, keepdims=True)
  return y, (y,)


def _softmax_backward(axis):
  def backward(xp, r, g):
    (y,) = r
    return (y * (g - xp.sum(g * y, axis=axis, keepdims=True)),)
  return backward


def _dot(xp, x, w):
  return xp.sum(x * w, axis=-1), (x, w)


def _dot_backward(xp, r, g):
  x, w = r
  g = g[..., None] * xp.ones_like(x * w)  # The product's shape, where x or w broadcasts.
  return xp.unbroadcast(g * w, x), xp.unbroadcast(g * x, w)


def _clamped_exp(xp, x):
  return xp.exp(xp.minimum(x, 10.0)), (x,)


def _huber(xp, x):
  a = xp.abs(x)
  return xp.where(a < 3.0, 0.5 * x * x, 3.0 * (a - 1.5)), (x,)


def _relu6(xp, x):
  return xp.clip(x, 0.0, 6.0), (x,)


def _normal(shape, seed):
  return np.random.default_rng(seed).standard_normal(shape)


MISTAKES = {
    # db summed over axis 0: right for x of rank 2 only.
    "bias_tanh_sum0": (
        _bias_tanh,
        lambda xp, r, g: (xp.unbroadcast(g * (1 - r[0] ** 2), r[1]),
                          xp.unbroadcast(g * (1 - r[0] ** 2), r[2])),
        lambda xp, r, g: (xp.unbroadcast(g * (1 - r[0] ** 2), r[1]),
                          xp.sum(g * (1 - r[0] ** 2), axis=0)),
        lambda rng: (_normal((4, 3), 1), _normal(3, 2)), "b"),
    # ds squeezed: a batch of one gives a 0-d cotangent for s of shape (1,).
    "row_scale_squeeze": (
        _row_scale,
        lambda xp, r, g: (xp.unbroadcast(g * r[1][:, None], r[0]),
                          xp.unbroadcast(xp.sum(g * r[0], axis=-1), r[1])),
        lambda xp, r, g: (xp.unbroadcast(g * r[1][:, None], r[0]),
                          xp.squeeze(xp.sum(g * r[0], axis=-1, keepdims=True))),
        lambda rng: (_normal((4, 3), 3), _normal(4, 4)), "s"),
    # dw kept as (1, C): right while the sample's w is (1, C), not for w of shape (C,).
    "gain_keepdims": (
        _gain,
        lambda xp, r, g: (xp.unbroadcast(g * r[1], r[0]), xp.unbroadcast(g * r[0], r[1])),
        lambda xp, r, g: (xp.unbroadcast(g * r[1], r[0]),
                          xp.sum(g * r[0], axis=0, keepdims=True)),
        lambda rng: (_normal((4, 3), 5), _normal((1, 3), 6)), "w"),
    # Divides by the batch size where the forward averages over every element.
    "mse_batch_size": (
        _mse,
        lambda xp, r, g: (xp.unbroadcast(2 * g * r[0] / r[0].size, r[1]),
                          xp.unbroadcast(-2 * g * r[0] / r[0].size, r[2])),
        lambda xp, r, g: (xp.unbroadcast(2 * g * r[0] / r[0].shape[0], r[1]),
                          xp.unbroadcast(-2 * g * r[0] / r[0].shape[0], r[2])),
        lambda rng: (_normal(8, 7), _normal(8, 8)), "x"),
    # The forward normalizes the last axis; the backward sums over axis 1.
    "l2_normalize_axis1": (
        _l2_normalize, _l2_normalize_backward(-1), _l2_normalize_backward(1),
        lambda rng: (_normal((4, 5), 9),), "x"),
    "softmax_axis1": (
        _softmax, _softmax_backward(-1), _softmax_backward(1),
        lambda rng: (_normal((3, 6), 10),), "x"),
    # dw as x.T @ g: right for x of rank 2 only.
    "dot_transposed": (
        _dot,
        lambda xp, r, g: _dot_backward(xp, r, g),
        lambda xp, r, g: (xp.unbroadcast(g[..., None] * r[1], r[0]), r[0].T @ g),
        lambda rng: (_normal((4, 3), 11), _normal(3, 12)), "w"),
    # The gradient of the clamp's flat branch forgotten: wrong only above 10.
    "clamped_exp_branch": (
        _clamped_exp,
        lambda xp, r, g: (xp.where(r[0] < 10.0, g * xp.exp(xp.minimum(r[0], 10.0)), 0.0),),
        lambda xp, r, g: (g * xp.exp(xp.minimum(r[0], 10.0)),),
        lambda rng: (_normal(12, 13),), "x"),
    # The linear branch's slope without its sign: wrong only below -3.
    "huber_sign": (
        _huber,
        lambda xp, r, g: (g * xp.clip(r[0], -3.0, 3.0),),
        lambda xp, r, g: (g * xp.where(xp.abs(r[0]) < 3.0, r[0], 3.0),),
        lambda rng: (np.clip(_normal(12, 14), -2.5, 2.5),), "x"),
    # The upper clip's zero gradient forgotten: wrong only above 6.
    "relu6_upper": (
        _relu6,
        lambda xp, r, g: (g * ((r[0] > 0) & (r[0] < 6.0)),),
        lambda xp, r, g: (g * (r[0] > 0),),
        lambda rng: (_normal(12, 15) + 0.5,), "x"),
}
