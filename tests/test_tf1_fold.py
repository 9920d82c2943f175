"""crossgrad.tf1.translate folds constant parts of a TF function by running each op itself:
every tf.raw_ops whose OpDef names differ from its Python signature, float ranges, and
IndexedSlices gradients, each against TensorFlow eagerly."""

import inspect

import jax
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import op_def_registry

import crossgrad as cg
from crossgrad import tf1
from crossgrad.tf1 import translate

_R = np.random.default_rng(0)
_B = np.array([[True, False, True], [False, False, True]])


def _rand(*shape):
  return _R.standard_normal(shape).astype(np.float32)


# Python keyword arguments of each renamed raw op, on constant inputs.
RENAMED = {
    "All": dict(input=_B, axis=[1], keep_dims=False),
    "Any": dict(input=_B, axis=[0], keep_dims=True),
    "EuclideanNorm": dict(input=_rand(2, 3), axis=[1], keep_dims=True),
    "ExpandDims": dict(input=_rand(2, 3), axis=1),
    "Max": dict(input=_rand(2, 3, 4), axis=[0, 2], keep_dims=False),
    "Mean": dict(input=_rand(2, 3, 4), axis=[2], keep_dims=True),
    "Min": dict(input=_rand(2, 3, 4), axis=[-1], keep_dims=False),
    "Prod": dict(input=np.array([2, 3, 4], np.int32), axis=0, keep_dims=False),
    "Select": dict(condition=np.array([True, False]), x=_rand(2, 3), y=_rand(2, 3)),
    "Split": dict(axis=1, value=_rand(2, 6), num_split=3),
    "SplitV": dict(value=_rand(2, 6), size_splits=[1, 2, 3], axis=1, num_split=3),
    "Squeeze": dict(input=_rand(1, 2, 1, 3), axis=[2]),
    "Sum": dict(input=_rand(2, 3, 4), axis=[0, 2], keep_dims=True),
    "Where": dict(condition=_B),
}


def _renamed_raw_ops() -> set[str]:
  """Every tf.raw_ops whose OpDef input or (non-inferred) attribute names differ from its
  Python keyword arguments."""
  found = set()
  for name in dir(tf.raw_ops):
    op_def = op_def_registry.get(name)
    if name.startswith("_") or op_def is None:
      continue
    params = set(inspect.signature(getattr(tf.raw_ops, name)).parameters) - {"name"}
    inferred = {a.type_attr for a in op_def.input_arg} | {
        a.number_attr for a in op_def.input_arg} | {a.type_list_attr for a in op_def.input_arg}
    names = {a.name for a in op_def.input_arg} | {
        a.name for a in op_def.attr if a.name not in inferred}
    if params != names:
      found.add(name)
  return found


def test_the_table_covers_every_renamed_raw_op():
  assert _renamed_raw_ops() == set(RENAMED)


def _folded(fn):
  """``fn()``'s outputs as translate.Program folds them (no inputs: all constant)."""
  program = translate.Program(fn, [])
  assert not program.missing, program.missing
  return program(np)


@pytest.mark.parametrize("name", sorted(RENAMED))
def test_renamed_raw_ops_fold_as_tf_runs_them(name):
  kwargs = RENAMED[name]
  call = lambda: getattr(tf.raw_ops, name)(**kwargs)  # noqa: E731
  want = call()
  want = want if isinstance(want, (list, tuple)) else [want]
  got = _folded(lambda: call())
  assert len(got) == len(want)
  for a, b in zip(got, want):
    assert np.asarray(a).dtype == b.dtype.as_numpy_dtype
    np.testing.assert_array_equal(a, b.numpy())


def test_float_ranges_fold_in_their_dtype():
  for dtype in (np.float32, np.float64):
    got, = _folded(lambda d=dtype: tf.range(d(0.5), d(3.0), d(0.5)))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.arange(0.5, 3.0, 0.5, dtype))


def _size_scaled_grad(op, grad):
  """XNOR-Net style: the gradient scaled by the number of elements."""
  return grad / tf.cast(tf.reduce_prod(tf.shape(op.inputs[0])), grad.dtype)


def _squeezed_grad(op, grad):
  """Squeezes one axis of a constant (1, 3, 1) ramp: every size-1 axis would be wrong."""
  ramp = tf.squeeze(tf.reshape(tf.range(1.0, 4.0, dtype=grad.dtype), (1, 3, 1)), axis=[0])
  return grad * ramp


def _gather_grad(op, grad):
  """tf.gradients of a gather: an IndexedSlices, with a repeated index."""
  x = op.inputs[0]
  return tf.gradients(tf.gather(x, [0, 0, 2]), x, grad_ys=tf.gather(grad, [1, 2, 0]))[0]


FOLDING_GRADS = {
    "size": (_size_scaled_grad, lambda g: g / g.size),
    "squeeze": (_squeezed_grad, lambda g: g * np.arange(1.0, 4.0)[:, None]),
    "gather": (_gather_grad, lambda g: np.stack([g[1] + g[2], 0 * g[1], g[0]])),
}


@pytest.mark.parametrize("name", sorted(FOLDING_GRADS))
def test_gradients_with_folded_parts_are_native_and_right(name):
  grad, expected = FOLDING_GRADS[name]
  op = tf1.port(f"tf1_fold_{name}", "Identity", grad, register=False,
                sample=lambda rng: (rng.standard_normal((3, 2)),))
  g = _rand(3, 2)
  assert op.forward.port.jax_strategy([g, g, g])[0] == "native"
  twin = cg.jax.get(op)
  for jit in (False, True):
    vjp = lambda c: jax.vjp(twin, c)[1](c)[0]  # noqa: E731 (x = g: Identity's output is g)
    np.testing.assert_allclose((jax.jit(vjp) if jit else vjp)(g), expected(g), rtol=1e-6)
  with tf.GradientTape() as tape:
    x = tf.constant(g)
    tape.watch(x)
    y = cg.tensorflow.get(op)(x)
  np.testing.assert_allclose(tape.gradient(y, x, output_gradients=x).numpy(), expected(g),
                             rtol=1e-6)
