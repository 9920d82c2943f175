"""bfloat16 rows and complex ops (docs/dtypes.md): correct ops pass, planted bugs fail.

Complex ops write their backward in JAX's convention; a conjugated backward (the torch or
TF convention ported as it stands) must fail finite differences, and a backend that
forgets the conversion must fail its comparison rows. Each framework's gradient of a
complex op must equal that framework's own autodiff of the same forward.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import ml_dtypes
import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.checker import compare
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
import toy_backends

FAST = settings(max_examples=20, deadline=None, derandomize=True)
BF16 = np.dtype(ml_dtypes.bfloat16)


def _complex_sample(rng):
  return (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3)),)


# Complex families: forward, the backward in JAX's convention (g times the derivative, no
# conjugation; for a real output g is real), whether the output is complex.
FAMILIES = {
    "square": (lambda xp, z, c: z * z, lambda xp, z, g, c: g * 2 * z),
    "scale": (lambda xp, z, c: c * z, lambda xp, z, g, c: g * c),
    "cube": (lambda xp, z, c: z * z * z, lambda xp, z, g, c: g * 3 * z * z),
    "exp": (lambda xp, z, c: xp.exp(c * z), lambda xp, z, g, c: g * c * xp.exp(c * z)),
    "abs2": (lambda xp, z, c: xp.real(z * xp.conj(z)),
             lambda xp, z, g, c: xp.multiply(g, 2 * xp.conj(z))),
    "real_part": (lambda xp, z, c: xp.real(c * z), lambda xp, z, g, c: xp.multiply(g, c)),
}


def _complex_op(family: str, c: complex, *, conjugated: bool = False) -> cg.OpDef:
  forward, backward = FAMILIES[family]
  if conjugated:  # The other frameworks' convention, ported without converting.
    def bwd(xp, z, g):
      return (xp.conj(backward(xp, z, xp.conj(g), c)),)
  else:
    def bwd(xp, z, g):
      return (backward(xp, z, g, c),)
  return cg.OpDef(name=f"test_{family}{'_conjugated' if conjugated else ''}",
                  forward=lambda xp, z: (forward(xp, z, c), z), backward=bwd,
                  allow_complex=True, sample=_complex_sample)


# Not real: for a real c, conjugating c * g changes nothing (scale, real_part).
COEFFICIENT = st.builds(complex, st.floats(-2.0, 2.0), st.floats(0.25, 2.0))


@FAST
@given(st.sampled_from(sorted(FAMILIES)), COEFFICIENT)
def test_complex_backward_in_jax_convention_passes_finite_differences(family, c):
  report = cg.cross_check([_complex_op(family, c)], backends=["numpy"])
  assert report.ok, report
  (fd,) = [r for r in report.rows if r.check == "fd"]
  assert "full Jacobian" in fd.note


@FAST
@given(st.sampled_from(sorted(FAMILIES)), COEFFICIENT)
def test_a_conjugated_backward_fails_finite_differences(family, c):
  report = cg.cross_check([_complex_op(family, c, conjugated=True)], backends=["numpy"])
  (fd,) = [r for r in report.rows if r.check == "fd"]
  assert not fd.ok and "NOT the derivative" in fd.note


class _Reference(toy_backends.NumpyTwin):
  """The reference (`cg.numpy.vjp`: bfloat16 computed in float32 and rounded once) under
  another name."""

  def vjp(self, op, params, inputs, cotangent):
    outputs, vjp_fn = cg.numpy.vjp(op, *inputs, **params)
    several = isinstance(outputs, tuple)
    return validation.as_tuple(outputs), vjp_fn(tuple(cotangent) if several else cotangent[0])


class _Conjugating(_Reference):
  """NumPy under another name whose complex gradients follow torch's convention, converted
  by the op core as TF's and torch's are, or (``forget=True``) not converted: the cross-check
  must pass the first and fail the second."""

  CONJUGATE_COMPLEX_GRADIENTS = True

  def __init__(self, forget: bool):
    super().__init__("conjugating_forgetful" if forget else "conjugating")
    self.forget = forget

  def vjp(self, op, params, inputs, cotangent):
    if self.forget:
      return super().vjp(op, params, inputs, cotangent)
    outputs, cotangents = super().vjp(op, params, inputs, [np.conj(g) for g in cotangent])
    return outputs, tuple(np.conj(c) for c in cotangents)


@pytest.mark.parametrize("forget", [False, True])
@pytest.mark.parametrize("family", ["square", "abs2", "exp"])
def test_a_backend_in_the_conjugate_convention_is_converted_back(family, forget):
  backend = base.register(_Conjugating(forget))
  try:
    report = cg.cross_check([_complex_op(family, 1.0 - 0.5j)], backends=[backend.NAME],
                            dtypes=["float64"])
  finally:
    base.unregister(backend.NAME)
  vjp = [r for r in report.rows if r.check == "vjp"]
  assert vjp and all(r.ok != forget for r in vjp), report


def _own_gradients(family: str, z: np.ndarray, g: np.ndarray) -> dict[str, tuple]:
  """Per framework: (the crossgrad op's gradient, that framework's autodiff of the plain
  forward) for cotangent ``g``."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  opdef = _complex_op(family, 1.0 - 0.5j)
  forward = FAMILIES[family][0]
  found = {}
  pair = []
  for f in (cg.jax.get(opdef), lambda z: forward(cg.jax.xp, z, 1.0 - 0.5j)):
    with base.load("jax").precision_scope([z]):  # complex128.
      _, vjp = jax.vjp(f, jnp.asarray(z))
      pair.append(np.asarray(vjp(jnp.asarray(g))[0]))
  found["jax"] = tuple(pair)
  pair = []
  for f in (cg.tensorflow.get(opdef), lambda z: forward(cg.tensorflow.xp, z, 1.0 - 0.5j)):
    zt = tf.constant(z)
    with tf.GradientTape() as tape:
      tape.watch(zt)
      out = f(zt)
    pair.append(tape.gradient(out, zt, output_gradients=tf.constant(g)).numpy())
  found["tensorflow"] = tuple(pair)
  pair = []
  for f in (cg.torch.get(opdef), lambda z: forward(cg.torch.xp, z, 1.0 - 0.5j)):
    zp = torch.tensor(z, requires_grad=True)
    f(zp).backward(torch.tensor(g))
    pair.append(zp.grad.numpy())
  found["torch"] = tuple(pair)
  return found


@pytest.mark.parametrize("family", ["square", "abs2"])
def test_each_framework_gets_its_own_autodiff_gradient(family):
  z = np.array([1.5 + 2j, -0.5 + 0.25j], np.complex128)
  g = np.array([0.25 - 0.75j, 1 + 1j], np.complex128)
  if family == "abs2":
    g = g.real.copy()
  found = _own_gradients(family, z, g)
  for framework, (op_gradient, own) in found.items():
    np.testing.assert_allclose(op_gradient, own, rtol=1e-12, err_msg=framework)
  # The conventions themselves (docs/dtypes.md's table), from the seed formulas.
  jax_convention = g * 2 * z if family == "square" else 2 * g * np.conj(z)
  np.testing.assert_allclose(found["jax"][1], jax_convention, rtol=1e-12)
  others = g * np.conj(2 * z) if family == "square" else 2 * g * z  # conj(vjp(conj(g))).
  for framework in ("tensorflow", "torch"):
    np.testing.assert_allclose(found[framework][1], others, rtol=1e-12)


def test_complex_ops_cross_check_in_every_framework():
  ops = [_complex_op("square", 1.0), _complex_op("abs2", 1.0)]
  report = cg.cross_check(ops, backends=["tensorflow", "jax", "torch"],
                          modes=["eager", "jit", "graph", "compile"])
  assert report.ok, report
  assert {r.backend for r in report.rows if r.check == "vjp"} == {"tensorflow", "jax", "torch"}
  bad = cg.cross_check([_complex_op("square", 1.0, conjugated=True)], backends=["jax"],
                       modes=["eager"])
  assert not bad.ok


def test_complex_rows_without_a_complex_dtype_of_that_precision_are_skipped():
  report = cg.cross_check([_complex_op("square", 1.0)], backends=["numpy"],
                          dtypes=["bfloat16", "float32"])
  skipped = [r for r in report.rows if r.dtype == "bfloat16"]
  assert [r.check for r in skipped] == ["skipped"] and "no complex dtype" in skipped[0].note
  assert report.ok


def test_a_complex_input_needs_allow_complex():
  op = cg.OpDef(name="test_undeclared", forward=lambda xp, z: (z * z, z),
                backward=lambda xp, z, g: (g * 2 * z,))
  with pytest.raises(CrossgradError, match="allow_complex=True"):
    cg.numpy.vjp(op, np.ones(2, np.complex64))


def test_complex_values_compare_as_real_and_imaginary_parts():
  a = np.array([1 + 1j], np.complex64)
  assert compare.compare([a], [a], ["x"], 1e-5).ok
  assert not compare.compare([np.conj(a)], [a], ["x"], 1e-5).ok


# bfloat16.

def _bf16_op(scale: float = 1.0) -> cg.OpDef:
  return cg.OpDef(
      name="test_bf16_tanh", forward=lambda xp, x: (xp.tanh(x) * 3.0, x),
      backward=lambda xp, x, g: (g * 3.0 * scale * (1 - xp.tanh(x) ** 2),),
      sample=lambda rng: (rng.standard_normal((4, 5)),))


def test_bfloat16_reference_is_float32_rounded_once():
  x = np.linspace(-2, 2, 11).astype(BF16)
  y, vjp_fn = cg.numpy.vjp(_bf16_op(), x)
  wide = x.astype(np.float32)
  assert y.dtype == BF16
  np.testing.assert_array_equal(y, (np.tanh(wide) * np.float32(3)).astype(BF16))
  g = np.ones_like(x)
  (dx,) = vjp_fn(g)
  want = (np.float32(3) * (1 - np.tanh(wide) ** 2)).astype(BF16)
  np.testing.assert_array_equal(dx, want)


def test_bfloat16_tolerance_is_in_ulps():
  assert compare.TOLERANCE["bfloat16"] == compare.ULPS["bfloat16"] * 2.0 ** -7
  one, next_up = np.array([1.0], BF16), np.nextafter(np.array([1.0], BF16), BF16.type(2))
  result = compare.compare([next_up], [one], ["x"], compare.TOLERANCE["bfloat16"])
  assert result.ok and result.ulps == 1


@FAST
@given(st.floats(1.07, 2.0) | st.floats(-2.0, 0.93))
def test_a_scaled_bfloat16_backward_in_one_backend_fails(scale):
  """A twin backend with a scaled backward (off by 7% or more) fails its vjp rows in
  bfloat16, which the 4-ULP (3.1%) tolerance must catch; the correct twin passes."""
  for bug, expect_ok in ((scale, False), (1.0, True)):
    twin = base.register(_Reference("scaled_twin", gradient_scale=bug))
    try:
      report = cg.cross_check([_bf16_op()], backends=[twin.NAME], dtypes=["bfloat16"])
    finally:
      base.unregister(twin.NAME)
    vjp = [r for r in report.rows if r.check == "vjp"]
    assert vjp and all(r.ok == expect_ok for r in vjp), (bug, report)


def test_bfloat16_cross_checks_in_every_framework():
  report = cg.cross_check(["leaky_relu", _bf16_op()], backends=["tensorflow", "jax", "torch"],
                          dtypes=["bfloat16"], modes=["eager", "jit", "compile"])
  assert report.ok, report
  assert {r.dtype for r in report.rows if r.check == "vjp"} == {"bfloat16"}


def test_a_0d_bfloat16_result_reaches_the_check():
  """TF hands NumPy a 0-d bfloat16 tensor as a scalar that np.asarray refuses: a loss
  (a 0-d output) or a 0-d input's gradient failed every TF bfloat16 row with "object
  __array__ method not producing an array". Its value: the formula, in bfloat16."""
  op = cg.OpDef(name="test_bf16_scaled_square_sum",
                forward=lambda xp, x, s: (s * xp.sum(x * x), (x, s)),
                backward=lambda xp, r, g: (2.0 * g * r[1] * r[0], g * xp.sum(r[0] * r[0])),
                sample=lambda rng: (rng.standard_normal((3,)), np.asarray(0.5)))
  report = cg.cross_check([op], backends=["tensorflow"], dtypes=["bfloat16"])
  assert report.ok, report.table(failures_only=True)
  assert {r.mode for r in report.rows if r.check == "vjp"} >= {"eager", "graph", "jit"}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_tensorflow_namespace_rounds_and_finds_nan_in_16_bit_floats(dtype):
  """The bfloat16 rows found TF's xp.round returning 16-bit inputs unrounded (and isnan
  always False): they were not counted as floating."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  xp = cg.tensorflow.xp
  x = tf.constant([0.484375, 1.5, -2.5, float("nan")], getattr(tf, dtype))
  np.testing.assert_array_equal(np.asarray(xp.round(x).numpy(), np.float32),
                                [0.0, 2.0, -2.0, np.nan])
  np.testing.assert_array_equal(xp.isnan(x).numpy(), [False, False, False, True])
  assert xp.finfo(x.dtype).bits == 16
