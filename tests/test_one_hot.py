"""xp.one_hot in every backend, eagerly and compiled, against a loop-built matrix."""

import jax
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg

LABELS = np.array([[0, 3, 1], [-1, 4, 2]], np.int32)  # -1 and 4 lie outside [0, 4).


def _expected(labels, depth):
  out = np.zeros(labels.shape + (depth,))
  for index, label in np.ndenumerate(labels):
    if 0 <= label < depth:
      out[index + (label,)] = 1.0
  return out


def _run(backend, labels, dtype, compiled):
  xp = getattr(cg, backend).xp
  # pylint: disable-next=unnecessary-lambda-assignment
  fn = lambda y: xp.one_hot(y, 4, dtype=getattr(xp, dtype))
  if compiled and backend == "tensorflow":
    fn = tf.function(fn, jit_compile=True)
  if compiled and backend == "jax":
    fn = jax.jit(fn)
  return np.asarray(fn(labels))


@pytest.mark.parametrize("backend, compiled", [
    ("numpy", False), ("tensorflow", False), ("tensorflow", True), ("jax", False),
    ("jax", True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_hot(backend, compiled, dtype):
  for labels in (LABELS, LABELS.astype(np.int64)):
    with jax.enable_x64(True):
      got = _run(backend, labels, dtype, compiled)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, _expected(labels, 4))
