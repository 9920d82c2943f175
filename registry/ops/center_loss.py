"""`center_loss` (Shigapova's TensorFlow course): Wen et al., "A Discriminative Feature
Learning Approach for Deep Face Recognition" (ECCV 2016), with the paper's center update
riding on the VJP.

Inputs: features ``x`` (m, d), integer labels ``y`` (m,), centers ``c`` (K, d).
Forward ``L = 1/2 sum_i ||x_i - c[y_i]||^2``. Backward: ``dx_i = g (x_i - c[y_i])``, the
true derivative; for the centers the paper's update instead of the derivative,

    dc_j = g * sum_i [y_i = j] (c_j - x_i) / (1 + sum_i [y_i = j])

(zero for a class with no sample in the batch), so one SGD step of learning rate
``alpha / g`` on ``c`` is the paper's ``c_j <- c_j - alpha * delta c_j``. No function has
this backward as its gradient (the mixed partials differ by the factor 1 / (1 + n_j)),
so ``dc`` is declared (``gradient="declared"``): ``x`` is an ``exact_inputs`` entry, which
the cross-check verifies by finite differences; dc has no oracle there and is compared
across backends, and tests/test_center_loss.py checks it against the paper's formula.

Labels outside [0, K) are a `CrossgradError` wherever their values are known when the op
runs (NumPy, eager TensorFlow and JAX). Under ``tf.function`` and ``jax.jit`` they cannot
be read; there such a sample's center counts as zero (its loss term is
``1/2 ||x_i||^2``, ``dx_i = g x_i``) and it moves no center.
"""

import numpy as np

from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.op_registry import register
from crossgrad.registry.opdef import OpDef

LABEL_DTYPES = ("int32", "int64")


def _check_label_values(xp, x, y, c):
  del x
  num_classes = c.shape[0]
  bounds = validation.concrete_bounds(y)
  if bounds is not None and (bounds[0] < 0 or bounds[1] >= num_classes):
    values = validation.concrete_values(y)
    bad = values[(values < 0) | (values >= num_classes)]
    raise CrossgradError(
        "label out of range", op="center_loss", backend=xp.backend, argument="input 'y'",
        expected=f"labels in [0, {num_classes}) (one per row of the centers 'c')",
        actual=f"{bad.size} outside, e.g. {int(bad[0])}",
        hint="Under jax.jit / tf.function this is not checked: such a sample's center "
             "counts as zero")


def _forward(xp, x, y, c):
  one_hot = xp.one_hot(y, c.shape[0], dtype=x.dtype)  # (m, K)
  diff = x - xp.matmul(one_hot, c)  # x_i - c[y_i]
  return 0.5 * xp.sum(xp.square(diff)), (diff, one_hot)


def _backward(xp, residuals, g):
  diff, one_hot = residuals
  counts = xp.sum(one_hot, axis=0)  # n_j
  pulls = xp.matmul(xp.matrix_transpose(one_hot), -diff)  # sum_i [y_i = j] (c_j - x_i)
  delta_c = pulls / xp.expand_dims(1.0 + counts, 1)
  return g * diff, None, g * delta_c


def _require_rank(spec, name, rank, what):
  if spec.shape is not None and len(spec.shape) != rank:
    raise CrossgradError(f"input must have rank {rank}", argument=f"input '{name}'",
                         expected=what, actual=str(spec))


def _check_inputs(specs):
  x, y, c = specs["x"], specs["y"], specs["c"]
  _require_rank(x, "x", 2, "features (m, d)")
  _require_rank(y, "y", 1, "labels (m,)")
  _require_rank(c, "c", 2, "centers (K, d)")
  if y.dtype not in LABEL_DTYPES:
    raise CrossgradError("labels must be integers", argument="input 'y'",
                         expected=" or ".join(LABEL_DTYPES), actual=str(y))
  if c.dtype != x.dtype:
    raise CrossgradError("centers must have the features' dtype", argument="input 'c'",
                         expected=x.dtype, actual=str(c))
  m, d = (None, None) if x.shape is None else x.shape
  if y.shape is not None and None not in (m, y.shape[0]) and y.shape[0] != m:
    raise CrossgradError("one label per feature row", argument="input 'y'",
                         expected=f"shape ({m},)", actual=str(y))
  if c.shape is None or c.shape[0] is None:
    raise CrossgradError("the number of classes must be static", argument="input 'c'",
                         expected="centers (K, d) with K known when traced", actual=str(c))
  if None not in (d, c.shape[1]) and c.shape[1] != d:
    raise CrossgradError("centers must have the features' width", argument="input 'c'",
                         expected=f"shape (K, {d})", actual=str(c))


def _sample(rng):
  m, d, num_classes = 12, 3, 5
  labels = rng.permutation(np.arange(m) % (num_classes - 1))  # Class 4 gets no sample.
  return (rng.standard_normal((m, d)), labels.astype(np.int32),
          rng.standard_normal((num_classes, d)))


CENTER_LOSS = register(OpDef(
    name="center_loss",
    forward=_forward,
    backward=_backward,
    gradient="declared",
    sample=_sample,
    nondiff=("y",),
    exact_inputs=("x",),
    check_inputs=_check_inputs,
    check_values=_check_label_values,
    doc="1/2 sum ||x_i - c[y_i]||^2; dx exact, dc the paper's center update "
        "sum_{y_i=j}(c_j - x_i) / (1 + n_j)",
))
