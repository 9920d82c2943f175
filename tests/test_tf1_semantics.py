"""TF1 semantics: a legacy gradient is graph-construction code, so every idiom (drop-in
py_func, Defun and override_map, and ports) runs it as a graph in TF eager mode, under
tf.function and XLA, and in JAX eager and jit. The gradients below only work in a graph:
one calls `tf.gradients`, one a nested v1 ``py_func`` whose ``Tout`` (float64) differs from
what its function returns (Python floats), one reads static shapes."""

import jax
import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad import tf1


def rescaled_grad(op, grad):
  """"The gradient of this composite, rescaled": tf.gradients inside the gradient."""
  x = op.inputs[0]
  return 0.5 * tf.gradients(tf.sin(x) * x, x, grad_ys=grad)[0]


def rescaled_expected(x, g):
  return 0.5 * g * (np.cos(x) * x + np.sin(x))


def bound_grad(op, grad):
  """A PAC-GP style bound: a v1 py_func with Tout float64 whose function returns floats."""
  x = op.inputs[0]
  total, two = tf.compat.v1.py_func(lambda v: (float(np.sum(v)), 2.0), [x],
                                    [tf.float64, tf.float64])
  return grad * total * two


def bound_expected(x, g):
  return g * np.sum(x) * 2.0


def static_shape_grad(op, grad):
  """Reads the input's static shape, which a TF1 graph always knows here."""
  return grad * float(op.inputs[0].shape[0])


def static_shape_expected(x, g):
  return g * x.shape[0]


CASES = {"tf_gradients": (rescaled_grad, rescaled_expected),
         "py_func_tout": (bound_grad, bound_expected),
         "static_shape": (static_shape_grad, static_shape_expected)}
TF_MODES = ("eager", "function", "xla")


def _inputs(seed):
  rng = np.random.default_rng(seed)
  return rng.standard_normal(5), rng.standard_normal(5)


def _tape_grad(fn, mode, x, g):
  def run(v, c):
    with tf.GradientTape() as tape:
      tape.watch(v)
      y = fn(v)
    return tape.gradient(y, v, output_gradients=c)

  if mode != "eager":
    run = tf.function(run, jit_compile=(mode == "xla"), autograph=False)
  return run(tf.constant(x), tf.constant(g)).numpy()


def _check_tf(name, fn, mode, x, g, op=None):
  grad, expected = CASES[name]
  if mode == "xla" and name == "py_func_tout":  # NumPy code on the host: XLA refuses it.
    with pytest.raises(cg.CrossgradError, match=r"XLA.*PyFunc"):
      _tape_grad(fn, mode, x, g)
    return
  np.testing.assert_allclose(_tape_grad(fn, mode, x, g), expected(x, g), rtol=1e-10)


@pytest.mark.parametrize("mode", TF_MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_drop_in_py_func(name, mode):
  x, g = _inputs(0)
  grad = CASES[name][0]
  fn = lambda v: tf1.py_func(np.copy, [v], [tf.float64], grad=grad)[0]  # noqa: E731
  if mode == "xla":  # A NumPy forward never runs under XLA (tests/test_tf1.py).
    with pytest.raises(cg.CrossgradError, match="XLA"):
      _tape_grad(fn, mode, x, g)
  else:
    _check_tf(name, fn, mode, x, g)


@pytest.mark.parametrize("mode", TF_MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_drop_in_defun(name, mode):
  x, g = _inputs(1)
  identity = tf1.Defun(tf.float64, python_grad_func=CASES[name][0])(tf.identity)
  _check_tf(name, identity, mode, x, g)


@pytest.mark.parametrize("mode", TF_MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_override_map(name, mode):
  x, g = _inputs(2)

  def fn(v):
    with tf1.override_map({"Identity": CASES[name][0]}):
      return tf.identity(v)

  _check_tf(name, fn, mode, x, g)


def _ports(name):
  grad = CASES[name][0]
  return {"op_type": tf1.port(f"tf1_sem_{name}_type", "Identity", grad, register=False),
          "tensorflow": tf1.port(f"tf1_sem_{name}_tf", tf.identity, grad, register=False,
                                 framework="tensorflow", input_names=("x",)),
          "numpy": tf1.port(f"tf1_sem_{name}_np", np.copy, grad, register=False,
                            input_names=("x",))}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ports_in_tensorflow_and_jax(name):
  expected = CASES[name][1]
  x, g = _inputs(3)
  for kind, op in _ports(name).items():
    fn = cg.tensorflow.get(op)
    for mode in TF_MODES:
      if mode == "xla" and kind == "numpy":
        continue  # A NumPy forward never runs under XLA (tests/test_tf1.py).
      _check_tf(name, fn, mode, x, g)
    twin = cg.jax.get(op)
    with jax.enable_x64(True):
      for jit in (False, True):
        vjp = lambda v, c, twin=twin: jax.vjp(twin, v)[1](c)[0]  # noqa: E731
        got = (jax.jit(vjp) if jit else vjp)(x, g)
        np.testing.assert_allclose(got, expected(x, g), rtol=1e-10, err_msg=f"{kind} {jit}")


def test_a_traced_gradient_is_reused_per_signature():
  traces = []

  def counting_grad(op, grad):
    traces.append(op.inputs[0].shape.as_list())
    return grad * 2.0

  def fn(v):
    with tf1.override_map({"Identity": counting_grad}):
      return tf.identity(v)

  for shape in ((3,), (3,), (4,), (3,)):
    x = np.ones(shape)
    np.testing.assert_array_equal(_tape_grad(fn, "eager", x, x), 2 * x)
  assert traces == [[3], [4]]
