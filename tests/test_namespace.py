"""Every backend's ``xp`` implements the documented list with NumPy's results and dtypes."""

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.registry.namespace import FUNCTIONS

_X = np.array([[-1.5, -0.5, 0.0], [0.5, 1.5, 2.5]])
_Y = np.array([[2.0, -1.0, 0.5], [0.25, 3.0, -2.0]])
_P = np.array([[0.5, 1.0, 2.0], [3.0, 4.0, 5.0]])

# One call per documented function: name -> (inputs, call). Inputs are converted to
# each backend's arrays; the result must equal NumPy's (the reference table's) result.
CALLS = {
    "abs": ((_X,), lambda xp, x: xp.abs(x)),
    "negative": ((_X,), lambda xp, x: xp.negative(x)),
    "sign": ((_X,), lambda xp, x: xp.sign(x)),
    "exp": ((_X,), lambda xp, x: xp.exp(x)),
    "log": ((_P,), lambda xp, x: xp.log(x)),
    "sqrt": ((_P,), lambda xp, x: xp.sqrt(x)),
    "square": ((_X,), lambda xp, x: xp.square(x)),
    "tanh": ((_X,), lambda xp, x: xp.tanh(x)),
    "maximum": ((_X, _Y), lambda xp, x, y: xp.maximum(x, y) + xp.maximum(x, 0.0)),
    "minimum": ((_X, _Y), lambda xp, x, y: xp.minimum(x, y) + xp.minimum(1.0, x)),
    "round": ((_X,), lambda xp, x: xp.round(x)),  # -1.5, -0.5, 0.5, 1.5, 2.5: half to even.
    "floor": ((_X,), lambda xp, x: xp.floor(x)),
    "ceil": ((_X,), lambda xp, x: xp.ceil(x)),
    "clip": ((_X,), lambda xp, x: xp.clip(x, -1.0, 1.0) + xp.clip(x, None, 0.5)
             + xp.clip(x, 0.0, None)),
    "where": ((_X, _Y), lambda xp, x, y: xp.where(x > y, x, 0.0) + xp.where(x < 0, -1.0, y)),
    "less": ((_X, _Y), lambda xp, x, y: xp.less(x, y)),
    "less_equal": ((_X, _Y), lambda xp, x, y: xp.less_equal(x, 0.0)),
    "greater": ((_X, _Y), lambda xp, x, y: xp.greater(x, y)),
    "greater_equal": ((_X, _Y), lambda xp, x, y: xp.greater_equal(x, 0.5)),
    "equal": ((_X, _Y), lambda xp, x, y: xp.equal(x, 0.0)),
    "logical_and": ((_X, _Y), lambda xp, x, y: xp.logical_and(x > 0, y > 0)),
    "logical_or": ((_X, _Y), lambda xp, x, y: xp.logical_or(x > 0, y > 0)),
    "logical_not": ((_X,), lambda xp, x: xp.logical_not(x > 0)),
    "sum": ((_X,), lambda xp, x: xp.sum(x, axis=0) + xp.sum(x)),
    "mean": ((_X,), lambda xp, x: xp.mean(x, axis=1, keepdims=True)),
    "max": ((_X,), lambda xp, x: xp.max(x, axis=(0, 1))),
    "min": ((_X,), lambda xp, x: xp.min(x, axis=-1)),
    "reshape": ((_X,), lambda xp, x: xp.reshape(x, (3, 2))),
    "transpose": ((_X,), lambda xp, x: xp.transpose(x) * 2.0 + xp.transpose(x, (1, 0))),
    "broadcast_to": ((_X,), lambda xp, x: xp.broadcast_to(x[:1], (4, 3))),
    "expand_dims": ((_X,), lambda xp, x: xp.expand_dims(x, 1)),
    "matmul": ((_X, _Y), lambda xp, x, y: xp.matmul(x, xp.transpose(y))),
    "take": ((_X,), lambda xp, x: xp.take(x, np.array([2, -1, 0, 3]), axis=1)
             + xp.take(x, np.array([[1], [2]]))[:, 0, :1]),  # Bad indices read 0.
    "zeros_like": ((_X,), lambda xp, x: xp.zeros_like(x)),
    "ones_like": ((_X,), lambda xp, x: xp.ones_like(x)),
    "full_like": ((_X,), lambda xp, x: xp.full_like(x, 3.0)),
    "zeros": ((_X,), lambda xp, x: xp.zeros((2, 3), x.dtype) + x),
    "ones": ((_X,), lambda xp, x: xp.ones((2, 3), "float32")),
    "astype": ((_X,), lambda xp, x: xp.astype(x, "int32")),
    "unbroadcast": ((_X, _Y), lambda xp, x, y: xp.unbroadcast(xp.expand_dims(x, 0) * 2.0,
                                                             x[:1]) + xp.unbroadcast(y, y)),
    "bitwise_xor": ((_X,), lambda xp, x: xp.bitwise_xor(xp.astype(x * 4, "int32"), 5)),
    "bitwise_or": ((_X,), lambda xp, x: xp.bitwise_or(xp.astype(x * 4, "int32"), 6)),
    "left_shift": ((_X,), lambda xp, x: xp.left_shift(xp.astype(x * 4, "int32"), 3)),
    "right_shift": ((_X,), lambda xp, x: xp.right_shift(xp.astype(x * 4, "int32"), 1)),
    "arange": ((_X,), lambda xp, x: xp.arange(4, "int32")),
    "concatenate": ((_X, _Y), lambda xp, x, y: xp.concatenate([x, y], axis=1)),
    "cumsum": ((_X,), lambda xp, x: xp.cumsum(x, 1) + xp.astype(
        xp.cumsum(xp.astype(x, "int32"), 0), x.dtype)),
    "segment_sum": ((_X,), lambda xp, x: xp.segment_sum(
        x, xp.astype(xp.arange(2, "int32") * 3 - 1, "int32"), 3)),  # Ids -1 (dropped) and 2.
    "segment_min": ((_X, _Y), lambda xp, x, y: xp.segment_min(
        xp.concatenate([x, y], axis=0), xp.astype(xp.arange(4, "int32") % 2, "int32"), 3)),
    # Labels -1..3 against depth 3: out-of-range rows are all zero in every backend.
    "one_hot": ((_X,), lambda xp, x: xp.one_hot(xp.astype(xp.floor(x + 0.5), "int32"), 3,
                                                 x.dtype)),
}


def test_every_documented_function_has_a_case():
  assert set(CALLS) == set(FUNCTIONS)


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_backend_namespace_matches_numpy(backend, dtype):
  module = getattr(cg, backend)
  import jax  # pylint: disable=g-import-not-at-top
  with jax.enable_x64(dtype == "float64"):
    for name, (inputs, call) in CALLS.items():
      inputs = [x.astype(dtype) for x in inputs]
      expected = np.asarray(call(cg.numpy.xp, *inputs))
      got = np.asarray(call(module.xp, *_as_backend(backend, inputs)))
      assert got.dtype == expected.dtype, f"{backend} xp.{name}: dtype {got.dtype}"
      np.testing.assert_allclose(got, expected, rtol=1e-6, err_msg=f"{backend} xp.{name}")


def _as_backend(backend, arrays):
  if backend == "torch":
    import torch  # pylint: disable=g-import-not-at-top
    return [torch.as_tensor(a) for a in arrays]
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return [tf.constant(a) for a in arrays]
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  return [jnp.asarray(a) for a in arrays]


def test_unlisted_function_is_a_clear_error():
  with pytest.raises(cg.CrossgradError, match=r"xp\.fft is not in crossgrad's op namespace"):
    cg.numpy.xp.fft  # pylint: disable=pointless-statement
