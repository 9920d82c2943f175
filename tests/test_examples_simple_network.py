"""The seeds' simple network: TF2, JAX and PyTorch train identically, and the gradient is the
seeds'."""

import subprocess
import sys

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.examples import simple_network as net


def _softmax(a):
  e = np.exp(a - a.max())
  return e / e.sum()


def test_the_frameworks_curves_agree_and_fall():
  curves = net.run(steps=40)
  assert list(curves) == net.frameworks() and "jax" in curves
  for name, losses in curves.items():
    np.testing.assert_allclose(losses, curves["tensorflow"], rtol=1e-5, err_msg=name)
  assert curves["tensorflow"][-1] < curves["tensorflow"][0]


def test_torch_trains_like_the_others():
  if "torch" not in net.frameworks():
    pytest.skip("PyTorch is not installed (crossgrad[torch])")
  c0, k0 = net.initial_values(1)
  np.testing.assert_allclose(net.train_torch(c0, k0, 25), net.train_jax(c0, k0, 25), rtol=1e-5)


def test_first_step_gradient_is_the_seeds_formula():
  """The gradient both frameworks train with, derived by hand from seed 003's chain rule."""
  c, k = net.initial_values(0)
  d = net.DATA + c
  e = c + k
  g_a = _softmax(d * e) - net.LABELS             # d loss / d a
  g_e = g_a * d                                   # a = d * e
  dc_add, dk, dd_add = (e + d) * g_e, d * g_e, e * g_e  # the overridden add
  expected_dc = dc_add + g_a * e + dd_add         # d = data + c feeds a and the add
  expected = (expected_dc, dk)

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cv, kv = tf.Variable(c), tf.Variable(k)
  with tf.GradientTape() as tape:
    dv = net.DATA + cv
    loss = tf.nn.softmax_cross_entropy_with_logits(
        net.LABELS, dv * cg.tensorflow.get("custom_add")(cv, kv, dv))
  for got, want in zip(tape.gradient(loss, [cv, kv]), expected):
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_runs_from_the_command_line():
  result = subprocess.run(
      [sys.executable, "-m", "crossgrad.examples.simple_network", "--steps=3"],
      capture_output=True, text=True, check=True, timeout=300)
  lines = result.stdout.strip().splitlines()
  assert lines[0].split() == ["step", *net.frameworks(), "max", "|diff|"]
  assert [int(line.split()[0]) for line in lines[1:]] == [1, 2, 3]
