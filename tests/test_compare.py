"""Comparison rows: relative error, ULPs, bit equality, special-value classes, relaxations."""

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.checker import compare

F32 = np.float32


def test_ulp_distance_counts_floats_between():
  one = F32(1.0)
  above = np.nextafter(one, F32(2.0))
  smallest = np.nextafter(F32(0.0), F32(1.0))  # 1.4e-45, the smallest subnormal.
  got = compare.ulp_distance(np.array([above, 0.0, -0.0, smallest, -smallest, np.nan, np.inf],
                                      F32),
                             np.array([one, -0.0, 0.0, -smallest, -smallest, np.nan, 1.0], F32))
  # Across zero: -1.4e-45 -> -0.0 == 0.0 -> 1.4e-45 is two steps.
  assert got.tolist()[:6] == [1.0, 0.0, 0.0, 2.0, 0.0, 0.0]
  assert got[6] > 2 ** 23  # inf vs 1.0: every float in [1, max], and one more.
  assert compare.ulp_distance(np.array([np.nan], F32), np.array([1.0], F32))[0] == np.inf
  big = np.array([np.finfo(np.float64).max]), np.array([-np.finfo(np.float64).max])
  assert compare.ulp_distance(*big)[0] == pytest.approx(2.0 * (2 ** 63 - 2 ** 52), rel=1e-12)


def test_ulps_of_each_float_dtype():
  for dtype in (np.float16, np.float32, np.float64):
    x = np.array([0.1, -3.0, 1e-3], dtype)
    y = np.nextafter(np.nextafter(x, dtype(np.inf)), dtype(np.inf))
    assert compare.ulp_distance(y, x).tolist() == [2.0, 2.0, 2.0], dtype


def test_bitwise_equal_tells_signed_zeros_apart_but_not_nans():
  a = np.array([0.0, np.nan, 1.0], F32)
  b = np.array([-0.0, -np.nan, 1.0], F32)
  assert compare.bitwise_equal(a, b).tolist() == [False, True, True]


def test_rows_report_relative_error_and_ulps():
  expected = np.array([1.0, 2.0, 4.0], F32)
  actual = expected.copy()
  actual[1] = np.nextafter(actual[1], F32(3.0))
  result = compare.compare([actual], [expected], ["dx"], 1e-5)
  assert result.ok and result.ulps == 1.0 and not result.identical
  assert result.error == pytest.approx(float(actual[1] - expected[1]) / 4.0)


def test_bitwise_names_the_first_differing_element():
  expected = np.array([[1.0, 2.0], [3.0, 4.0]], F32)
  actual = expected.copy()
  actual[1, 0] = np.nextafter(actual[1, 0], F32(0.0))
  result = compare.compare([expected, actual], [expected, expected], ["output 0", "dx"], 0.0,
                           bitwise=True)
  assert not result.ok
  assert result.note == f"dx[1, 0]: {float(actual[1, 0])!r} vs reference 3.0 (1 ulps)"
  same = compare.compare([np.array([np.nan, -0.0])], [np.array([np.nan, -0.0])], ["y"], 0.0,
                         bitwise=True)
  assert same.ok and same.identical
  signed = compare.compare([np.array([0.0])], [np.array([-0.0])], ["y"], 0.0, bitwise=True)
  assert not signed.ok and "y[0]: 0.0 vs reference -0.0" in signed.note


def test_dtype_shape_and_missing_arrays_fail_with_a_note():
  x = np.ones(3, F32)
  assert compare.compare([x.astype(np.float64)], [x], ["dx"], 1.0).note == \
      "dx: dtype float64, reference float32"
  assert compare.compare([np.ones(4, F32)], [x], ["dx"], 1.0).note == \
      "dx: shape (4,), reference (3,)"
  assert compare.compare([None], [x], ["dx"], 1.0).note == "dx: None, reference an array"
  ints = compare.compare([np.array([1, 2])], [np.array([1, 3])], ["idx"], 1.0)
  assert not ints.ok and ints.ulps == 1.0


def test_elementwise_comparison_judges_each_special_class():
  e = np.array([np.nan, np.inf, -np.inf, -0.0, 1.0, 1e30], F32)
  assert compare.compare([e.copy()], [e], ["y"], 1e-5, elementwise=True).ok
  for i, wrong in [(0, 0.0), (1, -np.inf), (2, np.nan), (4, 1.001)]:
    a = e.copy()
    a[i] = wrong
    result = compare.compare([a], [e], ["y"], 1e-5, elementwise=True)
    assert not result.ok and result.note.startswith(f"worst: y[{i}]"), (i, result)
  a = e.copy()
  a[3] = 0.0  # 0.0 equals -0.0, with no infinite error, but not bit for bit.
  signed = compare.compare([a], [e], ["y"], 1e-5, elementwise=True)
  assert signed.ok and signed.error == 0.0 and signed.ulps == 0.0
  bits = compare.compare([a], [e], ["y"], 0.0, elementwise=True, bitwise=True)
  assert not bits.ok and bits.note == "y[3]: 0.0 vs reference -0.0 (0 ulps)"
  # A global relative error would hide the 0.1% error at 1.0 behind the 1e30.
  a = e.copy()
  a[4] = 1.001
  assert compare.compare([a], [e], ["y"], 1e-5).ok


def test_flushed_subnormals_pass_only_as_a_relaxation_and_say_so():
  tiny = np.finfo(F32).tiny
  e = np.array([tiny * 0.25, -tiny * 0.5, 1.0], F32)  # Two subnormals.
  a = np.array([0.0, 0.0, 1.0], F32)  # Flushed, one losing its sign.
  strict = compare.compare([a], [e], ["y"], 1e-5, elementwise=True)
  e_alone = np.array([tiny * 0.25, -tiny * 0.5], F32)
  assert not compare.compare([np.zeros(2, F32)], [e_alone], ["y"], 1e-5, elementwise=True).ok
  relaxed = compare.compare([np.zeros(2, F32)], [e_alone], ["y"], 1e-5, elementwise=True,
                            relaxations=[compare.FTZ])
  assert relaxed.ok and relaxed.note.startswith(compare.FTZ[0] + "; strictly y[")
  assert relaxed.ulps == strict.ulps > 0
  assert not compare.compare([a], [e], ["y"], 0.0, bitwise=True,
                             relaxations=[compare.FTZ]).ok


def test_tolerance_values():
  assert compare.tolerance_for("float32") == 1e-5
  assert compare.tolerance_for("float64", "bitwise") == 0.0
  assert compare.tolerance_for("float64", 1e-3) == 1e-3
  assert compare.check_tolerance("1e-4") == 1e-4
  for bad in ("exact", -1.0, float("nan")):
    with pytest.raises(cg.CrossgradError, match="tolerance: unknown tolerance"):
      compare.check_tolerance(bad)


def test_mismatches_and_what_differs_per_element():
  e = np.array([np.nan, 1.0, -0.0, np.inf, 2.0], F32)
  a = np.array([1.0, np.nan, 0.0, -np.inf, 2.5], F32)
  bad = compare.mismatches(a, e, 1e-5)
  np.testing.assert_array_equal(bad, [True, True, False, True, True])
  assert compare.what_differs(a, e, bad) == {"NaN vs a number", "infinity", "finite value"}
  bits = compare.mismatches(a, e, 0.0, bitwise=True)
  np.testing.assert_array_equal(bits, [True, True, True, True, True])
  assert "signed zero" in compare.what_differs(a, e, bits)


def test_zero_size_arrays_compare_and_name_a_shape_mismatch():
  empty = np.zeros((0, 3), F32)
  assert compare.compare([empty], [empty.copy()], ["y"], 1e-5, elementwise=True).ok
  assert compare.compare([empty], [empty.copy()], ["y"], 0.0, bitwise=True).ok
  wrong = compare.compare([np.zeros((0, 2), F32)], [empty], ["y"], 1e-5)
  assert not wrong.ok and wrong.note == "y: shape (0, 2), reference (0, 3)"


def test_a_narrowing_backends_32_bit_integers_are_compared_with_64_bit_ones_by_value():
  got = [np.array([1, 2], np.int32), np.array([3], np.uint32), np.array([4], np.int16),
         np.array([0.5], np.float32), None]
  want = [np.array([1, 2], np.int64), np.array([3], np.uint64), np.array([4], np.int64),
          np.array([0.5], np.float64), np.array([1])]
  widened = compare.narrowing_undone(True, got, want)
  assert [None if a is None else a.dtype for a in widened] == [
      np.int64, np.uint64, np.int16, np.float32, None]  # Only int32/uint32 for int64/uint64.
  names = ["i", "u"]
  assert compare.compare(widened[:2], want[:2], names, 0.0).ok
  assert not compare.compare(compare.narrowing_undone(False, got, want)[:2], want[:2], names,
                             0.0).ok  # Not narrowed: the dtype differs.
  wrong = compare.narrowing_undone(True, [np.array([1, 3], np.int32)], want[:1])
  assert "i[1]: 3 vs reference 2" in compare.compare(wrong, want[:1], ["i"], 0.0).note


def test_a_cancelling_cotangent_is_held_to_the_whole_gradients_accuracy():
  """dt, a scalar parameter's gradient, is 0.0037 from terms near 1: float32 gets it to
  1e-7, 3e-5 of itself, a strict failure at 1e-5 though every backend is right. As one
  vector with dx (largest 0.9) it passes, and the note says how; an error that matters at
  the gradient's scale (dt's sign) still fails."""
  dx = np.array([0.9, -0.3, 0.5], np.float32)
  dt, off = np.array(0.0037, np.float32), np.array(0.0037 + 1e-7, np.float32)
  names = ["dx", "dt"]
  strict = compare.compare([dx, off], [dx, dt], names, 1e-5)
  assert not strict.ok and "dt" in strict.note
  whole = compare.compare([dx, off], [dx, dt], names, 1e-5, whole_vector=True)
  assert whole.ok and whole.error < 2e-7 and whole.ulps == strict.ulps
  assert whole.note.startswith("relative to the largest element of all the arrays; strictly")
  flipped = compare.compare([dx, -dt], [dx, dt], names, 1e-5, whole_vector=True)
  assert not flipped.ok and "dt" in flipped.note
  assert not compare.compare([dx, off], [dx, dt], names, 1e-5, whole_vector=True,
                             bitwise=True).ok
  dz, cz = (dx * 1j).astype(np.complex64), (dt * 1j).astype(np.complex64)  # Imaginary parts.
  assert compare.compare([dz, cz + np.complex64(1e-7j)], [dz, cz], names, 1e-5,
                         whole_vector=True).ok
