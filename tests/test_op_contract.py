"""The OpDef contract in every backend: tuple and integer outputs, integer inputs, and clear
errors for wrong inputs and for a backward that returns the wrong cotangents."""

import numpy as np
import pytest

import crossgrad as cg


def _magnitude_and_sign(xp, x):
  return (xp.abs(x), xp.astype(x > 0, xp.int32)), (x,)


def _magnitude_and_sign_bwd(xp, residuals, g):
  (x,) = residuals
  g_magnitude, g_sign = g
  assert g_sign is None, "integer outputs get no cotangent"
  return (xp.where(x > 0, g_magnitude, -g_magnitude),)


MAGNITUDE_AND_SIGN = cg.OpDef("t_magnitude_and_sign", _magnitude_and_sign,
                              _magnitude_and_sign_bwd, sample=lambda rng: (rng.normal(size=5),))


def _scale_rows(xp, x, rows):
  factor = xp.astype(rows, x.dtype)
  return x * xp.expand_dims(factor, 1), (factor,)


def _scale_rows_bwd(xp, residuals, g):
  (factor,) = residuals
  return g * xp.expand_dims(factor, 1), None


SCALE_ROWS = cg.OpDef("t_scale_rows", _scale_rows, _scale_rows_bwd, nondiff=("rows",),
                      sample=lambda rng: (rng.normal(size=(3, 2)), np.array([1, -2, 3])))


def test_tuple_output_with_integer_part(backend_vjp):
  x = np.array([-1.5, 2.0, -0.25])
  g = np.array([1.0, 2.0, 3.0])
  (magnitude, sign), (dx,) = backend_vjp(MAGNITUDE_AND_SIGN, (x,), (g, None))
  np.testing.assert_array_equal(magnitude, np.abs(x))
  np.testing.assert_array_equal(sign, [0, 1, 0])
  assert sign.dtype == np.int32
  np.testing.assert_array_equal(dx, np.sign(x) * g)


def test_integer_input_is_non_differentiable(backend_vjp):
  x, rows = np.ones((3, 2)), np.array([1, -2, 3], np.int32)
  g = np.arange(6.0).reshape(3, 2)
  out, (dx, drows) = backend_vjp(SCALE_ROWS, (x, rows), g)
  np.testing.assert_array_equal(out, x * rows[:, None])
  np.testing.assert_array_equal(dx, g * rows[:, None])
  assert drows is None


def test_user_ops_pass_the_cross_check():
  report = cg.cross_check([MAGNITUDE_AND_SIGN, SCALE_ROWS])
  assert report.ok, report.table(failures_only=True)
  assert {r.check for r in report.rows} - {"skipped"} == {
      "fd", "forward", "vjp", "special", "jvp", "second_order", "variant", "custom_rule"}
  # Only compiled torch (where installed) cannot run forward mode or second order; the
  # reference's skipped rows name the variants of the sample an op does not take.
  assert {(r.backend, r.mode) for r in report.rows if r.check == "skipped"
          and not r.note.startswith("variants the op does not take")} <= {("torch", "compile")}


def test_integer_into_differentiable_input_is_an_error(backend_vjp):
  with pytest.raises(cg.CrossgradError) as info:
    backend_vjp("leaky_relu", (np.array([1, 2], np.int32),), None)
  message = str(info.value)
  assert "input 'x'" in message and "a differentiable input must be floating" in message
  assert "got int32" in message


def test_wrong_number_of_inputs_is_an_error(backend_vjp):
  with pytest.raises(cg.CrossgradError,
                     match=r"wrong number of inputs: expected 3 \(c, k, d\), got 2"):
    backend_vjp("custom_add", (np.ones(2), np.ones(2)), np.ones(2))


def _bad_backward(result):
  return cg.OpDef("t_bad_backward", lambda xp, x, y: (x * y, (x, y)),
                  lambda xp, residuals, g: result(xp, *residuals, g))


@pytest.mark.parametrize("result, fragment", [
    (lambda xp, x, y, g: (g * y,), "wrong number of cotangents: expected 2 (x, y), got 1"),
    (lambda xp, x, y, g: (g * y, xp.sum(g * x)),
     "cotangent for input 'y': cotangent shape differs from the input's: expected "
     "float64[2, 3], got float64[]"),
    (lambda xp, x, y, g: (g * y, xp.astype(g * x, xp.float32)),
     "cotangent for input 'y': cotangent dtype differs from the input's: expected "
     "float64[2, 3], got float32[2, 3]"),
    (lambda xp, x, y, g: (g * y, None), "cotangent for input 'y': missing cotangent"),
])
def test_wrong_cotangents_name_the_op_backend_and_input(backend_vjp, result, fragment):
  x, y = np.ones((2, 3)), np.full((2, 3), 2.0)
  with pytest.raises(cg.CrossgradError) as info:
    backend_vjp(_bad_backward(result), (x, y), np.ones((2, 3)))
  message = str(info.value)
  assert message.startswith("[crossgrad] op 't_bad_backward' (")
  assert fragment in message
