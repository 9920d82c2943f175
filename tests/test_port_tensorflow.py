"""crossgrad-port on TensorFlow code: the tf.custom_gradient definitions of
tests/port_corpus/tf_*.py (a grad closure over forward values, upstream, *grad_ys,
several inputs, Python arguments, variables=) ported and proved against their originals."""

import ast

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.numpy import xp as numpy_xp
from crossgrad.port import tensorflow_source

import port_cases

EXPECTED = {"log1pexp": "ported", "bilinear": "ported", "reverse_gradient": "ported",
            "square_and_sine": "ported", "softsign_sum": "ported",
            "swish": "original_wrong", "scaled_by_variable": "refused",
            "dropout_like": "refused"}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
  return port_cases.port_file("tf_layers", str(tmp_path_factory.mktemp("port_tf")))


def test_every_definition_is_found_and_gets_its_status(results):
  assert sorted(results) == sorted(port_cases.definitions("tf_layers"))
  got = {name: r.status for name, r in results.items()}
  assert got == EXPECTED, {n: r.reasons for n, r in results.items()}


def test_the_closure_becomes_residuals_and_python_arguments_parameters(results):
  assert results["log1pexp"].definition.residuals == ("e",)
  assert set(results["bilinear"].definition.residuals) == {"x", "y"}
  d = results["softsign_sum"].definition
  assert (d.inputs, dict(d.params), dict(d.sample_params)) == (("x",), {"axis": -1},
                                                               {"axis": 1})
  assert results["square_and_sine"].definition.num_outputs == 2


def test_grad_ys_reach_both_outputs(results):
  """The two-output port's backward on NumPy: g1 * 2x + g2 * cos(x)."""
  op = cg.get(results["square_and_sine"].op)
  x, g1, g2 = np.random.default_rng(2).standard_normal((3, 5))
  (y1, y2), residuals = op.forward(numpy_xp, x)
  (gx,) = op.backward(numpy_xp, residuals, (g1, g2))
  np.testing.assert_allclose((y1, y2, gx), (x * x, np.sin(x), g1 * 2 * x + g2 * np.cos(x)))


def test_gradient_reversal_is_declared(results):
  assert results["reverse_gradient"].gradient == "declared"
  assert results["log1pexp"].gradient == "exact"


def test_the_wrong_backward_is_diagnosed_at_its_line(results):
  (reason,) = results["swish"].reasons
  swish = port_cases.line("tf_layers", "def swish")
  assert reason["line"] == port_cases.line("tf_layers", "def grad", after=swish)
  assert "not the derivative" in reason["why"], reason


def test_refusals_name_the_line_and_the_reason(results):
  (reason,) = results["scaled_by_variable"].reasons
  assert reason == {"line": port_cases.line("tf_layers", "def grad(upstream, variables"),
                    "call": "def grad", "why": tensorflow_source.VARIABLES}
  (reason,) = results["dropout_like"].reasons
  assert reason["line"] == port_cases.line("tf_layers", "tf.random.uniform(")
  assert reason["why"].startswith("randomness"), reason


def test_a_grad_reading_a_python_value_of_an_array_is_refused(tmp_path):
  """A Python value from constants is recomputed (realistic_tf's gelu_tanh); one read
  off an array cannot carry over."""
  source = tmp_path / "tf_python_value.py"
  source.write_text(
      "import tensorflow as tf\n\n\n@tf.custom_gradient\ndef f(x):\n  n = x.shape[0]\n"
      "  def grad(dy):\n    return dy * n\n  return x * n, grad\n")
  (d,) = tensorflow_source.find(ast.parse(source.read_text()), None, str(source))
  assert [(r.line, r.call) for r in d.refusals] == [(7, "def grad")], d.refusals
  assert "Python values" in d.refusals[0].why
