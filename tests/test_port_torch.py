"""crossgrad-port on torch.autograd.Function code (tests/port_corpus/torch_*.py).

The corpus is ported once (eager torch, float64: fast); each test reads the outcome. A
port counts as proved only through the check's own rows: the original's rows (its torch
kernel against the port's NumPy reference) and the port's. One definition is checked
under torch.compile too, and one used from JAX against its analytic derivatives.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import crossgrad as cg
from crossgrad.checker.report import Check
from crossgrad.port import emit, report, run
from crossgrad.port.prove import CheckSettings

CORPUS = pathlib.Path(__file__).parent / "port_corpus"
FILES = ["torch_layers.py", "torch_estimators.py", "torch_refused.py"]
EAGER = CheckSettings(modes=("eager",), dtypes=("float64",))
EXPECTED = {
    "ScaledTanh": "ported", "RMSNorm": "ported", "SoftmaxCrossEntropy": "ported",
    "TopOne": "ported", "GatedLinear": "ported", "SmoothClip": "ported", "Affine": "ported",
    "RoundSTE": "ported", "LogCosh": "original_wrong", "ReverseGrad": "ported",
    "NoisyRelu": "refused", "SignFlip": "refused", "Unsampled": "refused"}


def _unregister(results):
  for r in results:
    if r.op in cg.names():
      cg.unregister(r.op)
      cg.unregister_kernel(r.op, "torch", emit.ORIGINAL)


@pytest.fixture(scope="module", name="ported")
def _ported(tmp_path_factory):
  out = tmp_path_factory.mktemp("ported")
  results = run.files([str(CORPUS / f) for f in FILES], out_dir=str(out), settings=EAGER)
  yield {r.definition.name: r for r in results}
  _unregister(results)


def test_every_definition_gets_its_status(ported):
  assert {n: r.status for n, r in ported.items()} == EXPECTED


@pytest.mark.parametrize("name", [n for n, s in EXPECTED.items() if s == "ported"])
def test_a_ported_op_equals_its_original(name, ported):
  rows = ported[name].report.rows
  original = {r.check for r in rows if r.impl == emit.ORIGINAL and r.ok}
  assert {Check.FORWARD, Check.VJP} <= original, "the original was not compared"
  assert all(r.ok for r in rows)


def test_constructs_are_carried(ported):
  layers = {n: ported[n].definition for n in ("ScaledTanh", "TopOne", "GatedLinear",
                                              "SoftmaxCrossEntropy", "SmoothClip")}
  assert layers["ScaledTanh"].params == {"scale": 1.0}  # None gradient, Python argument
  assert layers["TopOne"].num_outputs == 2  # several outputs, one marked non-differentiable
  assert layers["SoftmaxCrossEntropy"].nondiff == ("labels",)  # a None gradient
  assert "vmap" not in layers["GatedLinear"].unsupported_modes  # setup_context + vmap rule
  assert "vmap" in layers["ScaledTanh"].unsupported_modes  # no setup_context: no torch.func
  assert "if mode == 'soft'" in layers["SmoothClip"].forward_source  # Python flow kept
  assert "xp.where(" in layers["SmoothClip"].backward_source  # grad_in[mask] = 0
  affine = ported["Affine"].definition
  assert "out = out + bias" in affine.forward_source  # += on its own result
  assert "if bias is not None:" in affine.forward_source and not affine.nondiff


def test_saved_intermediates_make_the_original_second_order_unsupported(ported):
  rms = ported["RMSNorm"]
  assert "second_order" in rms.definition.unsupported_modes
  assert any("second_order" in r["why"] for r in rms.reasons)
  assert "second_order" not in ported["ScaledTanh"].definition.unsupported_modes


def test_a_wrong_backward_is_reported_with_its_diagnosis(ported):
  (reason,) = ported["LogCosh"].reasons
  assert reason["line"] == 29 and reason["diagnosis"]["kind"] == "scale"
  assert reason["diagnosis"]["factor"] == pytest.approx(2.0)
  assert ported["LogCosh"].gradient == "exact"


def test_an_undeclared_non_derivative_is_ported_as_declared(ported):
  result = ported["ReverseGrad"]
  assert result.gradient == "declared"
  assert "declare it exact" in result.reasons[0]["why"]
  assert result.reasons[0]["diagnosis"]["factor"] == pytest.approx(-0.5)
  assert ported["RoundSTE"].gradient == "declared" and not ported["RoundSTE"].reasons


def test_refusals_name_line_call_and_reason(ported):
  assert ported["NoisyRelu"].reasons == [{
      "line": 11, "call": "torch.randn_like(x)",
      "why": "randomness: the port could not reproduce the original's random numbers"}]
  lines = {r["line"]: r["why"] for r in ported["SignFlip"].reasons}
  assert lines[27].startswith("control flow on array values")
  assert lines[34].startswith("in-place write")
  assert ported["NoisyRelu"].op is None


def test_without_a_sample_nothing_is_proved(ported):
  whys = [r["why"] for r in ported["Unsampled"].reasons]
  assert whys[0].startswith("the check could not run (sample row)")
  assert "SAMPLES['Unsampled']" in whys[0]
  assert any("no SAMPLES entry" in w for w in whys)
  assert "torch_refused.Unsampled" not in cg.names()  # Refused: not written, not registered.


def test_the_report_has_the_issue_format(ported, tmp_path):
  results = list(ported.values())
  report.write(results, str(tmp_path / "R.json"))
  data = json.loads((tmp_path / "R.json").read_text())
  keys = {"name", "framework", "file", "line", "status", "op", "module", "reasons",
          "seconds"}
  assert all(keys <= set(d) for d in data["definitions"])
  assert report.summary(results) == "13 definitions: 9 ported, 1 original_wrong, 3 refused"


def test_the_written_module_is_general_in_shapes(ported):
  module = ported["RMSNorm"].module
  text = pathlib.Path(module).read_text()
  assert "# from torch_layers.py:37" in text and "(2, 3, 5)" not in text
  op = cg.get(ported["RMSNorm"].op)
  x, w = np.random.default_rng(1).standard_normal((4, 7)), np.ones(7)  # other shapes
  want = torch.from_numpy(x) * torch.rsqrt(torch.from_numpy(x).pow(2).mean(-1, True) + 1e-6)
  np.testing.assert_allclose(cg.numpy.get(op.name)(x, w), want.numpy(), rtol=1e-12)


def test_a_ported_torch_op_is_a_jax_op(ported):
  import jax  # pylint: disable=g-import-not-at-top
  f = cg.jax.get(ported["ScaledTanh"].op, scale=0.7)
  x = np.linspace(-1.5, 1.5, 5, dtype=np.float32)
  hess = jax.hessian(lambda v: f(v).sum())(x)  # forward mode over the port's backward
  t = np.tanh(0.7 * x.astype(np.float64))
  np.testing.assert_allclose(np.diag(hess), -2 * 0.49 * t * (1 - t * t), rtol=1e-5,
                             atol=1e-6)
  grads = jax.jit(jax.vmap(jax.grad(lambda v: f(v).sum())))(x[:, None])
  np.testing.assert_allclose(grads[:, 0], 0.7 * (1 - t * t), rtol=1e-5)


def test_cg_port_of_one_class(tmp_path):
  from crossgrad.checker import selection  # pylint: disable=g-import-not-at-top
  copy = tmp_path / "one_layer.py"  # Its own op names, beside the fixture's.
  copy.write_text((CORPUS / "torch_estimators.py").read_text())
  source = selection.load_module(str(copy))
  result = cg.port(source.LogCosh, out_dir=str(tmp_path / "out"), settings=EAGER)
  try:
    assert (result.status, result.op) == ("original_wrong", "one_layer.LogCosh")
    assert "RoundSTE" not in pathlib.Path(result.module).read_text()
  finally:
    _unregister([result])
  with pytest.raises(cg.CrossgradError, match="not a custom-gradient definition"):
    cg.port(np.sum)


def test_bad_usage_exits_2(tmp_path):
  env = dict(os.environ)
  for argv in ([], [str(tmp_path / "missing.py"), "--out_dir=x"],
               [str(CORPUS / "torch_refused.py")]):
    done = subprocess.run([sys.executable, "-m", "crossgrad.port", *argv], env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") <= 2, done.stderr
