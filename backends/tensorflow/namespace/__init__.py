"""The Python Array API standard, revision 2024.12, written with core TensorFlow ops.

A module namespace: ``xp.sum``, ``xp.linalg.solve``, ``xp.float32``... taking and returning
plain ``tf.Tensor``, so ``tf.custom_gradient`` sees real tensors. Inside an op's forward and
backward the backend hands the standard's array object instead (``array_object``: a thin
wrapper of ``tf.Tensor`` that exists only while the body runs or traces). It never switches on
``tf.experimental.numpy``'s NumPy behaviour and never relies on it.

Choices the standard leaves to the implementation:

- Default dtypes: float32 (real floating), complex64 (complex floating), int64 (integral and
  indexing), as in PyTorch: TensorFlow's float32 default, NumPy's 64-bit indices. A Python float
  becomes float32 (``asarray(1.5)``); ``argmax``, ``nonzero``, ``unique_*``, ``searchsorted``
  return int64; ``sum``/``prod``/``cumulative_*`` of signed (unsigned) integers give int64
  (uint64).
- Type promotion: the standard's table; across kinds (bool/int/uint/float/complex) NumPy 2's
  ``result_type`` (int32 with float32 gives float64, int64 with uint64 gives float64, bool with
  int gives the int). Python scalars are "weak": they take the array's dtype when their kind
  fits (``x_f32 * 2.0`` stays float32, ``x_i8 + 1`` stays int8); across kinds NumPy 2 decides
  (an int array with a Python float gives float64). Integer ``divide`` gives float64 as in NumPy.
- Integer division by zero gives 0 (``floor_divide`` and ``remainder``); integer ``pow`` with a
  negative exponent truncates ``1 / x1**-x2`` toward zero; shifts by the bit width or more give 0
  (or -1 for negative ``x1`` shifted right): the same eagerly and under XLA.
- NaN: ``maximum``/``minimum``/``max``/``min`` propagate NaN; ``sort``/``argsort`` put NaN last
  (first when descending) and keep -0 and +0 in input order; ``searchsorted`` uses the same
  order; ``argmax``/``argmin`` return the first NaN. Eager TensorFlow and XLA disagree on all
  of these natively; here they agree.
- Devices are TensorFlow device strings (``x.device``); ``device=`` places the result there.

Compilation: every function works in ``tf.function(jit_compile=True)`` for static shapes,
except those whose output shape depends on values (``nonzero``, ``unique_*``, ``repeat`` with
an array of repeats), which work eagerly and in ``tf.function`` graphs. TensorFlow's XLA
bridge has no complex SVD, so ``linalg.svd``/``svdvals``/``pinv``/``matrix_rank`` and the
``2``/``-2``/``"nuc"`` matrix norms of complex matrices are eager/graph only; ``det`` and
``slogdet`` use their own partial-pivoting elimination (XLA has no LU), and complex ``eigh``
recovers eigenvalues from eigenvectors (TensorFlow's XLA complex eigenvalues are wrong).
Tensors cannot be mutated in place and do not support boolean-mask indexing; both are
array-object behaviour outside this namespace. The ``fft`` extension applies ``tf.signal`` along
one axis at a time.
"""

import types

from crossgrad.backends.tensorflow.namespace._dtypes import (
    __array_api_version__, asarray, astype, bool, can_cast, complex128, complex64, e, finfo,
    float32, float64, iinfo, inf, int16, int32, int64, int8, isdtype, nan, newaxis, pi,
    result_type, uint16, uint32, uint64, uint8)
from crossgrad.backends.tensorflow.namespace._creation import (
    arange, empty, empty_like, eye, from_dlpack, full, full_like, linspace, meshgrid, ones,
    ones_like, tril, triu, zeros, zeros_like)
from crossgrad.backends.tensorflow.namespace._elementwise import (
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_invert,
    bitwise_left_shift, bitwise_or, bitwise_right_shift, bitwise_xor, ceil, clip, conj,
    copysign, cos, cosh, divide, equal, exp, expm1, floor, floor_divide, greater, greater_equal,
    hypot, imag, isfinite, isinf, isnan, less, less_equal, log, log10, log1p, log2, logaddexp,
    logical_and, logical_not, logical_or, logical_xor, maximum, minimum, multiply, negative,
    nextafter, not_equal, positive, pow, real, reciprocal, remainder, round, sign, signbit, sin,
    sinh, sqrt, square, subtract, tan, tanh, trunc)
from crossgrad.backends.tensorflow.namespace._manipulation import (
    broadcast_arrays, broadcast_to, concat, expand_dims, flip, moveaxis, permute_dims, repeat,
    reshape, roll, squeeze, stack, take, take_along_axis, tile, unstack)
from crossgrad.backends.tensorflow.namespace._searching import (
    argmax, argmin, argsort, count_nonzero, nonzero, searchsorted, sort, unique_all,
    unique_counts, unique_inverse, unique_values, where)
from crossgrad.backends.tensorflow.namespace._statistics import (
    all, any, cumulative_prod, cumulative_sum, diff, max, mean, min, prod, std, sum, var)
from crossgrad.backends.tensorflow.namespace._linalg import (
    linalg, matmul, matrix_transpose, tensordot, vecdot)
from crossgrad.backends.tensorflow.namespace._fft import fft
from crossgrad.backends.tensorflow.namespace._info import __array_namespace_info__

# The standard's names: its functions, dtypes, constants and the linalg and fft extensions.
__all__ = sorted(name for name, value in globals().items()
                 if not name.startswith("_") and not isinstance(value, types.ModuleType))
