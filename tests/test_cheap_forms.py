"""The cheap forms of ``xp`` functions (every mode as fast as hand-written) keep the
standard's special cases: ``xp.sign`` is TensorFlow's ``Sign`` alone outside XLA and
torch's ``sign`` with one float ``clamp`` for NaN (eagerly on CPU), and still gives NaN for
NaN, +0 for both zeros and +-1 for +-inf, eagerly, in graphs, under XLA, compiled and
vmapped."""

import math

import numpy as np
import pytest
import tensorflow as tf
import torch

import crossgrad as cg

# The standard's sign (2024.12) of each value, written out (not NumPy's): NaN, +0 for both
# zeros, -1 / +1 by sign, subnormals included.
SIGNS = {math.nan: math.nan, -0.0: 0.0, 0.0: 0.0, math.inf: 1.0, -math.inf: -1.0, 2.5: 1.0,
         -3.0: -1.0, 1.0: 1.0, -1.0: -1.0, 0.5: 1.0, -0.5: -1.0, 1e300: 1.0, -1e300: -1.0}


def _assert_standard_signs(got, values):
  got = np.asarray(got, np.float64)
  for x, y in zip(values, got):
    want = SIGNS[x] if not math.isnan(x) else math.nan
    if math.isnan(want):
      assert math.isnan(y), (x, y)
    else:
      assert y == want and math.copysign(1.0, y) == math.copysign(1.0, want), (x, y)


VALUES = list(SIGNS)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.float16, tf.bfloat16])
@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_tensorflow_sign_keeps_the_special_cases(mode, dtype):
  values = [v for v in VALUES if abs(v) < 1e30 or dtype == tf.float64 or math.isinf(v)]
  x = tf.constant(values, tf.float64)
  fn = lambda t: cg.tensorflow.xp.sign(tf.cast(t, dtype))  # pylint: disable=unnecessary-lambda-assignment
  if mode != "eager":
    fn = tf.function(fn, jit_compile=mode == "xla", autograph=False)
  _assert_standard_signs(tf.cast(fn(x), tf.float64), values)


def test_tensorflow_sign_is_one_op_outside_xla():
  x = tf.constant([-0.0, math.nan, 2.0])
  graph = tf.function(cg.tensorflow.xp.sign).get_concrete_function(x).graph
  assert sorted(n.op for n in graph.as_graph_def().node) == ["Identity", "Placeholder", "Sign"]
  # Nested in an XLA function it keeps the select that makes XLA's -0 a +0.
  outer = tf.function(lambda t: tf.function(cg.tensorflow.xp.sign)(t), jit_compile=True)
  _assert_standard_signs(outer(tf.constant([-0.0, math.nan, -3.0])), [-0.0, math.nan, -3.0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_torch_sign_keeps_the_special_cases(dtype):
  values = [v for v in VALUES if abs(v) < 1e30 or dtype == torch.float64 or math.isinf(v)]
  x = torch.tensor(values, dtype=dtype)
  _assert_standard_signs(cg.torch.xp.sign(x).double(), values)
  batched = torch.func.vmap(cg.torch.xp.sign)(torch.stack([x, x]))
  _assert_standard_signs(batched[1].double(), values)


def test_torch_sign_compiles_to_the_same_values_and_passes_no_gradient():
  x = torch.tensor(VALUES, requires_grad=True)
  compiled = torch.compile(cg.torch.xp.sign, fullgraph=True, dynamic=False)
  _assert_standard_signs(compiled(x.detach()).double(), VALUES)
  (grad,) = torch.autograd.grad(cg.torch.xp.sign(x).sum(), x)
  assert torch.equal(grad, torch.zeros_like(x))  # sign's derivative, also at -1 and 0.
  assert cg.torch.xp.sign(torch.tensor([-3, 0, 4])).tolist() == [-1, 0, 1]
