"""crossgrad-port on JAX code: jax.custom_vjp (defvjp, nondiff_argnums, functools.partial)
and jax.custom_jvp (defjvp) definitions of tests/port_corpus/jax_*.py ported and proved
against their originals, with the statuses the corpus's authors' intent calls for."""

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.numpy import xp as numpy_xp
from crossgrad.port import jax_source
from crossgrad.port import prove

import port_cases

EXPECTED = {
    "jax_losses": {"log1pexp": "ported", "weighted_sq_dist": "ported",
                   "leaky_relu": "ported", "huber": "ported", "round_ste": "ported",
                   "scaled_tanh": "original_wrong", "clip_gradient": "ported",
                   "noisy_sign": "refused"},
    "jax_jvp": {"safe_log1p_exp": "ported", "sin_times": "ported", "soft_clip": "ported"},
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
  out = tmp_path_factory.mktemp("port_jax")
  # jax_jvp in eager and jit, jax_losses (the larger) in eager only, to keep the test fast.
  return {stem: port_cases.port_file(stem, str(out), None if stem == "jax_jvp" else
                                     ("eager",)) for stem in EXPECTED}


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_every_definition_is_found_and_gets_its_status(results, stem):
  assert sorted(results[stem]) == sorted(port_cases.definitions(stem))
  got = {name: r.status for name, r in results[stem].items()}
  assert got == EXPECTED[stem], {n: r.reasons for n, r in results[stem].items()}


def test_a_custom_vjp_original_declares_no_forward_mode(results):
  for name in ("log1pexp", "leaky_relu"):
    assert results["jax_losses"][name].definition.unsupported_modes == {
        "jvp": jax_source.NO_FORWARD_MODE}
  assert not results["jax_jvp"]["sin_times"].definition.unsupported_modes


def test_nondiff_argnums_are_parameters(results):
  d = results["jax_losses"]["clip_gradient"].definition
  assert (d.inputs, dict(d.params)) == (("x",), {"lo": -0.5, "hi": 0.5})
  d = results["jax_losses"]["leaky_relu"].definition
  assert (d.inputs, dict(d.params)) == (("x",), {"alpha": 0.1})
  d = results["jax_losses"]["huber"].definition  # huber = jax.custom_vjp(_huber, ...)
  assert (d.inputs, dict(d.params), d.original) == (("x",), {"delta": 1.0}, "huber")


def test_surrogates_are_declared_gradients(results):
  assert results["jax_losses"]["round_ste"].gradient == "declared"
  assert results["jax_jvp"]["soft_clip"].gradient == "declared"
  assert results["jax_jvp"]["sin_times"].gradient == "exact"


def test_the_wrong_backward_is_diagnosed_at_its_line(results):
  (reason,) = results["jax_losses"]["scaled_tanh"].reasons
  assert reason["line"] == port_cases.line("jax_losses", "def scaled_tanh_bwd")
  assert "not the derivative" in reason["why"], reason


def test_refusals_name_the_line_and_the_reason(results):
  (reason,) = results["jax_losses"]["noisy_sign"].reasons
  assert reason["line"] == port_cases.line("jax_losses", "jax.random.uniform(")
  assert reason["why"].startswith("randomness"), reason


def test_a_backward_not_linear_in_g_makes_a_reverse_only_jax_op(results):
  """Gradient clipping: JAX cannot transpose the backward, so the port declares jax:jvp
  unsupported (its JAX op is a custom_vjp) and the report says so at the backward."""
  result = results["jax_losses"]["clip_gradient"]
  assert cg.get(result.op).unsupported_modes == {"jax:jvp": prove.NOT_LINEAR_NOTE}
  (reason,) = result.reasons
  assert reason == {"line": port_cases.line("jax_losses", "def clip_gradient_bwd"),
                    "call": "backward", "why": prove.NOT_LINEAR_NOTE}
  import jax  # pylint: disable=g-import-not-at-top
  clip = cg.jax.get(result.op, lo=-0.5, hi=0.5)
  g = np.array([-2.0, 0.1, 3.0], np.float32)
  _, vjp = jax.vjp(clip, np.zeros(3, np.float32))
  np.testing.assert_allclose(vjp(g)[0], np.clip(g, -0.5, 0.5))


def test_the_transposed_jvp_rule_is_the_rules_gradient(results):
  """The custom_jvp port's backward, run on NumPy: the rule's (cos(x) y, sin(x)) times g."""
  op = cg.get(results["jax_jvp"]["sin_times"].op)
  rng = np.random.default_rng(1)
  x, y, g = (rng.standard_normal((2, 3)) for _ in range(3))
  out, residuals = op.forward(numpy_xp, x, y)
  gx, gy = op.backward(numpy_xp, residuals, g)
  np.testing.assert_allclose(out, np.sin(x) * y)
  np.testing.assert_allclose(gx, g * np.cos(x) * y)
  np.testing.assert_allclose(gy, g * np.sin(x))


def test_a_jvp_rule_outside_the_transposable_form_is_refused(tmp_path):
  source = tmp_path / "jax_nonlinear.py"
  source.write_text(
      "import jax\nimport jax.numpy as jnp\n\n\n@jax.custom_jvp\ndef f(x):\n  return x * x\n"
      "\n\n@f.defjvp\ndef f_jvp(primals, tangents):\n  (x,), (t,) = primals, tangents\n"
      "  return f(x), jnp.sin(t)\n")
  import ast  # pylint: disable=g-import-not-at-top
  (d,) = jax_source.find(ast.parse(source.read_text()), None, str(source))
  (refusal,) = d.refusals
  assert (refusal.line, refusal.why) == (13, jax_source.NOT_LINEAR)
