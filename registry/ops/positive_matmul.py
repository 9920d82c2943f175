"""`positive_matmul` (the layer-gradient Q&A, example 2): a dense layer whose effective weights are
non-negative.

Inputs ``x`` (m, n_in) and ``w`` (n_out, n_in); ``y = x @ relu(w)^T`` (m, n_out). The
backward is ``dx = g @ relu(w)`` and ``dw = (g^T @ x)`` where ``w > 0``, zero elsewhere:
the gradient for ``w`` passes only where the weight is positive, as the Q&A intends,
which is exactly the derivative of the forward (relu' taken as 0 at 0), so the op is
``exact``. What the Q&A's code got wrong (it does not run):

* ``w`` was created as (1, units) whatever the input width; it is (units, n_in) here.
* ``dw = dy @ transpose(inputs)`` has mismatched shapes; the right one is ``dy^T @ x``.
* the input gradient was ``None``, cutting the layers below off; it is ``dy @ relu(w)``.
* ``tf.custom_gradient`` on a Keras ``call`` must return variable gradients through
  its ``variables`` argument; returning ``(None, dw)`` does not do that. Here the weight
  is an ordinary op input, so any framework routes its gradient.
"""

import numpy as np

from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.op_registry import register
from crossgrad.registry.opdef import OpDef


def _forward(xp, x, w):
  positive = w > 0
  w_pos = xp.where(positive, w, 0.0)
  return xp.matmul(x, xp.matrix_transpose(w_pos)), (x, w_pos, positive)


def _backward(xp, residuals, g):
  x, w_pos, positive = residuals
  dw = xp.matmul(xp.matrix_transpose(g), x)
  return xp.matmul(g, w_pos), xp.where(positive, dw, 0.0)


def _check_inputs(specs):
  x, w = specs["x"], specs["w"]
  for name, spec, what in (("x", x, "inputs (m, n_in)"), ("w", w, "weights (n_out, n_in)")):
    if spec.shape is not None and len(spec.shape) != 2:
      raise CrossgradError("input must have rank 2", argument=f"input '{name}'",
                           expected=what, actual=str(spec))
  if w.dtype != x.dtype:
    raise CrossgradError("weights must have the inputs' dtype", argument="input 'w'",
                         expected=x.dtype, actual=str(w))
  if x.shape is not None and w.shape is not None and None not in (x.shape[1], w.shape[1]) \
      and x.shape[1] != w.shape[1]:
    raise CrossgradError("weights must have one column per input feature",
                         argument="input 'w'", expected=f"shape (n_out, {x.shape[1]})",
                         actual=str(w))


def _sample(rng):
  w = rng.standard_normal((4, 5))
  w += 0.1 * np.sign(w)  # Keep finite differences off the kink at w = 0.
  return rng.standard_normal((6, 5)), w


POSITIVE_MATMUL = register(OpDef(
    name="positive_matmul",
    forward=_forward,
    backward=_backward,
    gradient="exact",
    sample=_sample,
    check_inputs=_check_inputs,
    edge_samples=lambda: (0.0,),  # The kink of relu(w), and the subnormals beside it.
    special_differences={"daz": "a positive subnormal weight is not > 0 there, so it is "
                                "clipped to 0 and gets no gradient"},
    doc="x @ relu(w)^T, gradient for w only where w > 0 (exact)",
))
