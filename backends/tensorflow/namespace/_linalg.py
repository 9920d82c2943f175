"""Linear algebra: ``matmul``, ``tensordot``, ``vecdot``, ``matrix_transpose`` and the ``linalg``
extension, with its own partially pivoted LU for ``det``/``slogdet`` (XLA has none)."""

import collections
import math
import types

import tensorflow as tf

from crossgrad.backends.tensorflow.namespace import _raw
from crossgrad.backends.tensorflow.namespace._dtypes import (
    _REAL_OF, _cast, _index, _is_complex, _norm_axis, _promote, _py_max, _py_min, _reduce_axes,
    _shape, _tensor, bool, finfo, int16, int32, int64, int8, uint16, uint32, uint64, uint8)
from crossgrad.backends.tensorflow.namespace._creation import eye
from crossgrad.backends.tensorflow.namespace._elementwise import conj, multiply
from crossgrad.backends.tensorflow.namespace._manipulation import (
    _broadcast_shape, _transpose, broadcast_arrays)
from crossgrad.backends.tensorflow.namespace._searching import count_nonzero
from crossgrad.backends.tensorflow.namespace._statistics import max, min, sum


# Linear algebra (top level and the `linalg` extension).

def _matmul_dtype_fix(fn, a, b):
  """``fn(a, b)`` for dtypes TF's matmul kernels lack: wrap-around in a wider integer."""
  d = a.dtype
  if d.is_floating or d.is_complex:  # First: each DType comparison below is Python code.
    return fn(a, b)
  if d in (int8, int16, uint8, uint16):
    return tf.cast(fn(tf.cast(a, int32), tf.cast(b, int32)), d)
  if d == uint32:
    return tf.cast(fn(tf.cast(a, int64), tf.cast(b, int64)), d)
  if d == uint64:
    return tf.bitcast(fn(tf.bitcast(a, int64), tf.bitcast(b, int64)), d)
  if d == bool:
    return tf.not_equal(fn(tf.cast(a, int32), tf.cast(b, int32)), 0)
  return fn(a, b)


def matmul(x1, x2, /):
  return matmul_transposed(x1, x2, False, False)


def matmul_transposed(x1, x2, transpose_a: bool, transpose_b: bool):
  """``matmul`` of ``matrix_transpose(x1)`` where ``transpose_a`` (and of ``x2``'s where
  ``transpose_b``) as one TensorFlow matmul, not a transpose and a matmul (the array
  object's lazy `matrix_transpose`). A transposed operand has at least two dimensions."""
  x1, x2 = _promote(x1, x2)
  if x1.shape.rank == 0 or x2.shape.rank == 0:
    raise ValueError("matmul does not take zero-dimensional arrays")
  vec1, vec2 = x1.shape.rank == 1, x2.shape.rank == 1
  a = x1[None, :] if vec1 else x1
  b = x2[:, None] if vec2 else x2
  inner_a = a.shape[-2] if transpose_a else a.shape[-1]
  inner_b = b.shape[-1] if transpose_b else b.shape[-2]
  if inner_a is not None and inner_b is not None and inner_a != inner_b:
    shapes = [s[:-2].concatenate(s[-2:][::-1]) if t else s
              for s, t in ((x1.shape, transpose_a), (x2.shape, transpose_b))]
    raise ValueError(f"matmul: shapes {shapes[0]} and {shapes[1]} do not align")
  out = _matmul_dtype_fix(lambda a, b: _raw.matmul(a, b, transpose_a, transpose_b), a, b)
  if vec1:
    out = tf.squeeze(out, -2)
  if vec2:
    out = tf.squeeze(out, -1)
  return out


def matrix_transpose(x, /):
  x = _tensor(x)
  if x.shape.rank < 2:
    raise ValueError("matrix_transpose needs at least two dimensions")
  perm = list(range(x.shape.rank))
  perm[-2], perm[-1] = perm[-1], perm[-2]
  return _transpose(x, perm)


def tensordot(x1, x2, /, *, axes=2):
  x1, x2 = _promote(x1, x2)
  if isinstance(axes, (tuple, list)):
    axes = [_norm_axis(tuple(axes[0]), x1.shape.rank), _norm_axis(tuple(axes[1]), x2.shape.rank)]
  else:
    axes = _index(axes, "axes")
  return _matmul_dtype_fix(lambda a, b: tf.tensordot(a, b, axes), x1, x2)


def vecdot(x1, x2, /, *, axis=-1):
  x1, x2 = _promote(x1, x2)
  n1, n2 = x1.shape[axis], x2.shape[axis]  # The vectors' axis does not broadcast.
  if n1 is not None and n2 is not None and n1 != n2:
    raise ValueError(f"vecdot: axis {axis} has sizes {n1} and {n2}")
  x1, x2 = broadcast_arrays(x1, x2)
  axis = _norm_axis(axis, x1.shape.rank)[0]
  return tf.reduce_sum(conj(x1) * x2, axis)


def _diagonal(x, offset=0):
  x = _tensor(x)
  m, n = _shape(x)[-2:]
  r0, c0 = _py_max(0, -offset), _py_max(0, offset)
  length = _py_max(0, _py_min(m - r0, n - c0))
  flat = tf.reshape(x, _shape(x)[:-2] + [m * n])
  positions = tf.constant([(r0 + j) * n + c0 + j for j in range(length)], int64)
  return tf.gather(flat, positions, axis=-1)


def _trace(x, /, *, offset=0, dtype=None):
  return sum(_diagonal(x, offset), axis=-1, dtype=dtype)


def _adjoint(x):
  return conj(matrix_transpose(x))


def _cholesky(x, /, *, upper=False):
  lower = tf.linalg.cholesky(_tensor(x))
  return _adjoint(lower) if upper else lower


def _cross(x1, x2, /, *, axis=-1):
  x1, x2 = _promote(x1, x2)
  x1, x2 = broadcast_arrays(x1, x2)
  axis = _norm_axis(axis, x1.shape.rank)[0]
  if _shape(x1)[axis] != 3:
    raise ValueError(f"cross: axis {axis} must have size 3, got {_shape(x1)[axis]}")
  a = tf.unstack(x1, axis=axis)
  b = tf.unstack(x2, axis=axis)
  return tf.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                   a[0] * b[1] - a[1] * b[0]], axis=axis)


def _lu_pivots(a):
  """Gaussian elimination with partial pivoting of (..., n, n): (permutation sign, pivots)."""
  n = _shape(a)[-1]
  rows = tf.range(n)
  magnitude_dtype = _REAL_OF.get(a.dtype, a.dtype)

  # Rows and columns are picked with one-hot masks, not gathers at the loop index: XLA can
  # then differentiate the loop twice (a gather's gradient transposes by a traced axis).
  def pick(x, mask, axis):
    return tf.reduce_sum(tf.where(mask, x, tf.zeros([], x.dtype)), axis)

  def body(k, a, sign, pivots):
    is_k = tf.equal(rows, k)
    column = pick(a, is_k, -1)
    magnitude = tf.where(rows >= k, tf.math.abs(column), -tf.ones([], magnitude_dtype))
    p = tf.math.argmax(magnitude, axis=-1, output_type=int32)
    is_p = tf.equal(rows, p[..., None])
    row_k = pick(a, is_k[:, None], -2)
    row_p = pick(a, is_p[..., :, None], -2)
    a = tf.where(is_k[:, None], row_p[..., None, :],
                 tf.where(is_p[..., :, None], row_k[..., None, :], a))
    sign = tf.where(tf.equal(p, k), sign, -sign)
    pivot = pick(row_p, is_k, -1)
    pivots = tf.where(is_k, pivot[..., None], pivots)
    safe = tf.where(tf.equal(pivot, 0), tf.ones_like(pivot), pivot)
    factor = tf.where(rows > k, pick(a, is_k, -1) / safe[..., None], tf.zeros_like(column))
    a = a - factor[..., :, None] * row_p[..., None, :]
    return k + 1, a, sign, pivots

  sign = tf.ones(_shape(a)[:-2], a.dtype)
  pivots = tf.zeros(_shape(a)[:-1], a.dtype)
  # A bound on the loop lets XLA differentiate it (fixed-size stacks of the iterations).
  _, _, sign, pivots = tf.while_loop(lambda k, *_: k < n, body,
                                     (tf.constant(0), a, sign, pivots), maximum_iterations=n)
  return sign, pivots


def _det(x, /):
  x = _tensor(x)
  sign, pivots = _lu_pivots(x)
  return sign * tf.reduce_prod(pivots, -1)


_SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])


def _slogdet(x, /):
  x = _tensor(x)
  sign, pivots = _lu_pivots(x)
  magnitude = tf.math.abs(pivots)
  logabsdet = tf.reduce_sum(tf.math.log(magnitude), -1)
  unit = pivots / tf.cast(tf.where(tf.equal(magnitude, 0), tf.ones_like(magnitude), magnitude),
                          x.dtype)
  sign = sign * tf.reduce_prod(unit, -1)
  singular = tf.reduce_any(tf.equal(magnitude, 0), -1)
  return _SlogdetResult(tf.where(singular, tf.zeros_like(sign), sign), logabsdet)


_EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


def _eigh(x, /):
  x = _tensor(x)
  values, vectors = tf.linalg.eigh(x)
  if _is_complex(x):  # Eigenvalues from the vectors: TF's XLA complex eigenvalues are wrong.
    values = tf.math.real(tf.reduce_sum(tf.math.conj(vectors) * tf.linalg.matmul(x, vectors),
                                        -2))
  return _EighResult(values, vectors)


def _eigvalsh(x, /):
  x = _tensor(x)
  return _eigh(x).eigenvalues if _is_complex(x) else tf.linalg.eigvalsh(x)


def _inv(x, /):
  return tf.linalg.inv(_tensor(x))


def _outer(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  if x1.shape.rank != 1 or x2.shape.rank != 1:
    raise ValueError("outer needs one-dimensional arrays")
  return multiply(x1[:, None], x2[None, :])


_QRResult = collections.namedtuple("QRResult", ["Q", "R"])


def _qr(x, /, *, mode="reduced"):
  if mode not in ("reduced", "complete"):
    raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
  q, r = tf.linalg.qr(_tensor(x), full_matrices=mode == "complete")
  return _QRResult(q, r)


_SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])


def _svd(x, /, *, full_matrices=True):
  s, u, v = tf.linalg.svd(_tensor(x), full_matrices=full_matrices)
  return _SVDResult(u, s, _adjoint(v))


def _svdvals(x, /):
  return tf.linalg.svd(_tensor(x), compute_uv=False)


def _solve(x1, x2, /):
  x1, x2 = _promote(x1, x2)
  vector = x2.shape.rank == 1
  b = x2[:, None] if vector else x2
  batch = _broadcast_shape(_shape(x1)[:-2], _shape(b)[:-2])
  a = tf.broadcast_to(x1, batch + _shape(x1)[-2:])
  b = tf.broadcast_to(b, batch + _shape(b)[-2:])
  out = tf.linalg.solve(a, b)
  return out[..., 0] if vector else out


def _default_rtol(x):
  m, n = _shape(x)[-2:]
  return _py_max(m, n) * finfo(x.dtype).eps


def _matrix_rank(x, /, *, rtol=None):
  x = _tensor(x)
  s = _svdvals(x)
  rtol = _default_rtol(x) if rtol is None else rtol
  rtol = _cast(rtol, s.dtype)
  tol = tf.reduce_max(s, -1, keepdims=True) * (rtol[..., None] if rtol.shape.rank else rtol)
  return count_nonzero(tf.greater(s, tol), axis=-1)


def _pinv(x, /, *, rtol=None):
  x = _tensor(x)
  s, u, v = tf.linalg.svd(x, full_matrices=False)
  rtol = _default_rtol(x) if rtol is None else rtol
  rtol = _cast(rtol, s.dtype)
  cutoff = tf.reduce_max(s, -1, keepdims=True) * (rtol[..., None] if rtol.shape.rank else rtol)
  keep = tf.greater(s, cutoff)
  s_inv = tf.where(keep, 1 / tf.where(keep, s, tf.ones_like(s)), tf.zeros_like(s))
  return tf.linalg.matmul(v * tf.cast(s_inv, x.dtype)[..., None, :], _adjoint(u))


def _matrix_power(x, n, /):
  x = _tensor(x)
  n = _index(n, "n")
  if n < 0:
    x, n = _inv(x), -n
  result = None
  while n:
    if n & 1:
      result = x if result is None else matmul(result, x)
    n >>= 1
    if n:
      x = matmul(x, x)
  if result is None:
    shape = _shape(x)
    return tf.broadcast_to(eye(shape[-1], dtype=x.dtype), shape)
  return result


def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  axes = _reduce_axes(x, axis)
  a = tf.math.abs(x)
  if ord == math.inf:
    out = max(a, axis=tuple(axes), keepdims=keepdims)
  elif ord == -math.inf:
    out = min(a, axis=tuple(axes), keepdims=keepdims)
  elif ord == 0:
    out = tf.cast(count_nonzero(a, axis=tuple(axes), keepdims=keepdims), a.dtype)
  elif ord == 1:
    out = tf.reduce_sum(a, axes, keepdims=keepdims)
  elif ord == 2:
    out = tf.math.sqrt(tf.reduce_sum(a * a, axes, keepdims=keepdims))
  else:
    p = tf.constant(ord, a.dtype)
    out = tf.math.pow(tf.reduce_sum(tf.math.pow(a, p), axes, keepdims=keepdims), 1 / p)
  return out


def _matrix_norm(x, /, *, keepdims=False, ord="fro"):  # pylint: disable=redefined-builtin
  x = _tensor(x)
  if ord == "fro":
    a = tf.math.abs(x)
    out = tf.math.sqrt(tf.reduce_sum(a * a, [-2, -1]))
  elif ord in ("nuc", 2, -2):
    s = _svdvals(x)
    out = {"nuc": lambda: tf.reduce_sum(s, -1), 2: lambda: max(s, axis=-1),
           -2: lambda: min(s, axis=-1)}[ord]()
  elif ord in (1, -1, math.inf, -math.inf):
    sums = tf.reduce_sum(tf.math.abs(x), -2 if ord in (1, -1) else -1)
    out = max(sums, axis=-1) if ord in (1, math.inf) else min(sums, axis=-1)
  else:
    raise ValueError(f"matrix_norm: unsupported ord {ord!r}")
  return out[..., None, None] if keepdims else out


linalg = types.SimpleNamespace(
    cholesky=_cholesky, cross=_cross, det=_det, diagonal=_diagonal, eigh=_eigh,
    eigvalsh=_eigvalsh, inv=_inv, matmul=matmul, matrix_norm=_matrix_norm,
    matrix_power=_matrix_power, matrix_rank=_matrix_rank, matrix_transpose=matrix_transpose,
    outer=_outer, pinv=_pinv, qr=_qr, slogdet=_slogdet, solve=_solve, svd=_svd,
    svdvals=_svdvals, tensordot=tensordot, trace=_trace, vecdot=vecdot,
    vector_norm=_vector_norm)
for _name, _fn in vars(linalg).items():
  _fn.__name__ = _fn.__qualname__ = _name
del _name, _fn
