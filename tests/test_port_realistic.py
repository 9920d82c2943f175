"""crossgrad-port on a realistic corpus (tests/port_corpus/realistic_*.py: 12 torch, 10
JAX, 8 TF definitions of the kinds model code holds, two with real backward bugs): each
file ported once, every definition's status, refusal and diagnosis asserted, and every
status proved at a second sample with resized axes."""

import numpy as np
import pytest

import crossgrad as cg

from crossgrad.port import prove
from crossgrad.port import resize

import port_cases

TORCH = {name: "ported" for name in (
    "SignSTE", "FakeQuantize", "GradientReversal", "MishFunction", "SafeNorm",
    "LinearFunction", "FusedBiasGelu", "GeluErf", "RMSNormFunction", "SoftmaxCrossEntropyLoss",
    "MaxWithIndex", "SmoothL1")} | {"StableLogSigmoid": "original_wrong"}
JAX = {name: "ported" for name in (
    "safe_sqrt", "scaled_softplus", "sincos", "logsumexp", "softmax_cross_entropy",
    "layer_norm", "swish", "fake_quant", "clip_gradient")} | {
        "smooth_l1": "original_wrong"}
TF = {name: "ported" for name in (
    "flip_gradient", "stable_softplus", "safe_norm", "gelu_tanh", "mean_and_variance",
    "log_cosh_loss", "round_ste")} | {"dense_relu": "refused"}
EXPECTED = {"realistic_torch": TORCH, "realistic_jax": JAX, "realistic_tf": TF}
# Eager only, to keep CI fast: the command's default adds each framework's compiled mode
# (test_port_jax checks jit, test_port_torch torch.compile).
MODES = {stem: ("eager",) for stem in ("realistic_torch", "realistic_jax", "realistic_tf")}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
  out = str(tmp_path_factory.mktemp("port_realistic"))
  return {stem: port_cases.port_file(stem, out, MODES[stem]) for stem in EXPECTED}


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_every_definition_is_found_and_gets_its_status(results, stem):
  assert sorted(results[stem]) == sorted(port_cases.definitions(stem))
  got = {name: r.status for name, r in results[stem].items()}
  assert got == EXPECTED[stem], {n: r.reasons for n, r in results[stem].items()
                                 if r.status != EXPECTED[stem][n]}


def test_at_least_26_of_31_are_proved(results):
  statuses = [r.status for stem in results.values() for r in stem.values()]
  assert len(statuses) == 31
  assert sum(s in ("ported", "original_wrong") for s in statuses) >= 27


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_every_proof_ran_at_a_second_sample(results, stem):
  for name, r in results[stem].items():
    if r.status != "refused":
      assert r.second_sample in resize.DESCRIPTIONS.values(), (name, r.second_sample)


def test_literal_sizes_in_a_sample_fall_back_to_the_leading_axes(results):
  # np.eye(classes)[...] keeps its classes when the logits' grow: the leading axes only.
  for stem, name in (("realistic_torch", "SoftmaxCrossEntropyLoss"),
                     ("realistic_jax", "softmax_cross_entropy")):
    assert results[stem][name].second_sample == resize.DESCRIPTIONS["leading"]
  assert results["realistic_torch"]["LinearFunction"].second_sample == (
      resize.DESCRIPTIONS["all"])


def test_the_two_real_bugs_are_diagnosed_at_their_backward(results):
  (reason,) = results["realistic_torch"]["StableLogSigmoid"].reasons
  assert reason["line"] == port_cases.line("realistic_torch", "def backward",
                                           port_cases.line("realistic_torch",
                                                           "class StableLogSigmoid"))
  assert "x <= 0" in reason["why"], reason  # The negative branch.
  (reason,) = results["realistic_jax"]["smooth_l1"].reasons
  assert reason["line"] == port_cases.line("realistic_jax", "def _smooth_l1_bwd")
  assert reason["diagnosis"]["kind"] == "elements", reason


def test_refusals_name_the_line_and_the_reason(results):
  (reason,) = results["realistic_tf"]["dense_relu"].reasons
  assert reason["line"] == port_cases.line("realistic_tf", "def grad(upstream, variables")
  assert reason["why"].startswith("the grad takes variables="), reason
  assert results["realistic_jax"]["clip_gradient"].definition.op_unsupported_modes == {
      "jax:jvp": prove.NOT_LINEAR_NOTE}  # A backward not linear in g: reverse mode only.


def test_constructs_are_read_as_written(results):
  torch, jax, tf = (results[s] for s in ("realistic_torch", "realistic_jax", "realistic_tf"))
  assert torch["SoftmaxCrossEntropyLoss"].definition.nondiff == ("targets",)
  assert jax["softmax_cross_entropy"].definition.nondiff == ("labels",)  # bwd's None.
  assert dict(torch["SafeNorm"].definition.params) == {"eps": 1e-12}  # Not in the sample.
  assert dict(jax["scaled_softplus"].definition.params) == {"beta": 2.0}
  assert jax["sincos"].definition.num_outputs == 2
  assert set(tf["gelu_tanh"].definition.residuals) == {"x", "t"}  # c: recomputed.
  assert tf["round_ste"].gradient == "declared"


def test_resizing_grows_every_draw_consistently():
  rng = resize.Resizing(np.random.default_rng(0), "all")
  assert rng.standard_normal((3, 4)).shape == (4, 5)
  assert rng.integers(0, 3, size=(4, 1)).shape == (5, 1)
  assert rng.uniform(0.0, 1.0, 4).shape == (5,)
  assert np.ndim(rng.random()) == 0
  leading = resize.Resizing(np.random.default_rng(0), "leading")
  assert leading.normal(0.0, 1.0, size=(3, 4)).shape == (4, 4)


def test_a_size_baked_into_the_original_is_found_at_the_second_sample(tmp_path):
  (result,) = port_cases.port_file("torch_shapes", str(tmp_path), ("eager",)).values()
  cg.unregister(result.op)
  cg.unregister_kernel(result.op, "torch", "original")
  assert result.status == "original_wrong", result.reasons
  (reason,) = result.reasons
  assert reason["why"].startswith("at the second sample (every axis"), reason
  assert reason["diagnosis"]["kind"] == "scale", reason  # 1/4 where 1/5 is right.
