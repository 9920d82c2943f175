"""Where ``jax.numpy`` departs from the Array API standard 2024.12: crossgrad's fixes.

``crossgrad.jax.xp`` is ``jax.numpy`` itself but for the functions here. Each fix decides in
Python, while tracing, from the static dtype, shape or arguments, so the compiled computation of
real-dtype arguments is ``jax.numpy``'s own (``xp.exp`` of float32 lowers to the same HLO as
``jnp.exp``): the fixes cost nothing to the ops written against ``xp``. The exceptions are
``floor_divide`` and ``remainder`` of real floats, which select the standard's values with one
``where`` (no built-in op calls them). Each fix restores a rule of the standard
(https://data-apis.org/array-api/2024.12/):

- ``expand_dims``: an axis outside ``[-N-1, N]`` raises ``IndexError`` (JAX: ``ValueError``).
- ``permute_dims``: axes may be negative (JAX refuses ``(-1,)``).
- ``searchsorted``: the result has the default integer dtype (JAX: int32 also with x64 on).
- ``cumulative_prod``: integers narrower than the default integer accumulate in the default
  (unsigned) integer, as ``prod`` does (JAX keeps uint8 products in uint8).
- ``finfo``: ``eps``, ``max``, ``min``, ``smallest_normal`` are Python floats (JAX: NumPy
  scalars), ``bits`` an int, ``dtype`` the real dtype.
- Complex special cases of ``acos``, ``acosh``, ``asinh``, ``atanh``, ``cosh``, ``sinh``,
  ``tanh``, ``exp``, ``expm1``, ``log``, ``log1p``, ``sqrt`` (infinite and NaN components, where
  JAX returns NaN + NaN j, a stray imaginary part, or ``1 - 0j`` for ``tanh(+inf + 2j)``) and
  ``sign`` (``sign(-0 + 0j)`` is ``0 + 0j``): the values the standard lists. Complex arguments
  only; as the standard requires, ``f(conj(z)) == conj(f(z))`` carries each listed value to
  negative imaginary parts, and ``f(-z) == -f(z)`` (odd ``asinh``, ``atanh``, ``sinh``,
  ``tanh``) to negative real parts.

- ``floor_divide`` of real floats with a zero or infinite operand: the quotient, as the
  standard prefers (``floor(x1 / x2)``: ``inf // 2`` is ``inf``, ``-0 // 2`` is ``-0``,
  ``3 // -inf`` is ``-0``; JAX follows Python: NaN, 0, -1); ``remainder`` of real floats: a zero
  result has ``x2``'s sign, as Python's ``%`` (``-0 % 2`` is ``+0``).

Left as JAX has them: arrays are immutable (no ``x[i] = v``), their operators (``//``, ``%``:
the array object, not ``xp``), and ``sign(-0.0)``, which is ``-0.0`` (the standard: ``+0``;
fixing it would add an op to every real ``sign``).
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from crossgrad.registry import numpy_like


def expand_dims(x, /, axis=0):
  n = jnp.ndim(x) + 1
  if isinstance(axis, int) and not -n <= axis < n:
    raise IndexError(f"expand_dims: axis {axis} is outside [{-n}, {n - 1}] for a "
                     f"{n - 1}-D array")
  return jnp.expand_dims(x, axis)


def permute_dims(x, /, axes):
  n = jnp.ndim(x)
  return jnp.permute_dims(x, tuple(a + n if -n <= a < 0 else a for a in axes))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
  out = jnp.searchsorted(x1, x2, side=side, sorter=sorter)
  return out.astype(jax.dtypes.canonicalize_dtype(np.int64))


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  kind = jnp.result_type(x)
  if dtype is None and jnp.issubdtype(kind, jnp.integer):
    default = np.uint64 if jnp.issubdtype(kind, jnp.unsignedinteger) else np.int64
    dtype = jnp.promote_types(kind, jax.dtypes.canonicalize_dtype(default))
  return jnp.cumulative_prod(x, axis=axis, dtype=dtype, include_initial=include_initial)


def sign(x, /):
  out = jnp.sign(x)
  if not jnp.iscomplexobj(out):
    return out
  return jnp.where(x == 0, jnp.zeros_like(out), out)


def floor_divide(x1, x2, /):
  out = jnp.floor_divide(x1, x2)
  if not jnp.issubdtype(out.dtype, jnp.floating):
    return out
  # With a zero or infinite operand the quotient is already integral (or NaN).
  special = (x1 == 0) | (x2 == 0) | jnp.isinf(x1) | jnp.isinf(x2)
  return jnp.where(special, jnp.divide(x1, x2), out)


def remainder(x1, x2, /):
  out = jnp.remainder(x1, x2)
  if not jnp.issubdtype(out.dtype, jnp.floating):
    return out
  return jnp.where(out == 0, jnp.copysign(jnp.zeros_like(out), x2), out)  # Python's sign.


def _complex_cases(f: Callable, cases: Callable, odd: bool = False) -> Callable:
  """``f``, where complex arguments meet ``cases(a, b) -> (where, real, imag)``.

  ``cases`` sees ``a``, ``b`` = the real and imaginary parts (``|a|`` for an ``odd`` f, ``|b|``)
  and gives the standard's value where ``where`` holds; signs follow the symmetries."""

  def fixed(x, /):
    out = f(x)
    if not jnp.iscomplexobj(out):  # Static: real arguments get f's own computation.
      return out
    a, b = jnp.real(x), jnp.imag(x)
    where, re, im = cases(jnp.abs(a) if odd else a, jnp.abs(b))
    re, im = (jnp.broadcast_to(jnp.asarray(v, a.dtype), a.shape) for v in (re, im))
    re = jnp.copysign(re, a) if odd else re
    return jnp.where(where, jax.lax.complex(re, jnp.copysign(im, b)), out)

  fixed.__name__ = fixed.__qualname__ = f.__name__
  fixed.__doc__ = f"{f.__name__} with the standard's complex special cases (see {__name__})."
  return fixed


_NAN, _INF, _PI = math.nan, math.inf, math.pi


def _inf_nan(a, b):  # An infinite real part with an infinite or NaN imaginary part.
  return jnp.isinf(a) & ~jnp.isfinite(b)


def _log_cases(a, b):
  return (jnp.isinf(a) & jnp.isnan(b)) | (jnp.isnan(a) & jnp.isinf(b)), _INF, _NAN


def _zero_or_inf_at_inf_nan(a, b):  # a is |a| here.
  return ((a == 0) | jnp.isinf(a)) & ~jnp.isfinite(b)


FIXES = {
    "expand_dims": expand_dims, "permute_dims": permute_dims, "searchsorted": searchsorted,
    "cumulative_prod": cumulative_prod, "sign": sign, "floor_divide": floor_divide,
    "remainder": remainder,
    "finfo": functools.partial(numpy_like.finfo, jnp.finfo),
    "acos": _complex_cases(jnp.acos, lambda a, b: (
        jnp.isfinite(a) & jnp.isnan(b), jnp.where(a == 0, _PI / 2, _NAN), _NAN)),
    "acosh": _complex_cases(jnp.acosh, lambda a, b: (
        (a == 0) & jnp.isnan(b), _NAN, _PI / 2)),
    "asinh": _complex_cases(jnp.asinh, lambda a, b: (jnp.isnan(a) & (b == 0), _NAN, 0.0),
                            odd=True),
    "atanh": _complex_cases(jnp.atanh, lambda a, b: (
        jnp.isnan(b) | (jnp.isnan(a) & jnp.isfinite(b)),
        jnp.where(jnp.isnan(b) & ((a == 0) | jnp.isinf(a)), 0.0, _NAN), _NAN), odd=True),
    "cosh": _complex_cases(jnp.cosh, lambda a, b: (
        _zero_or_inf_at_inf_nan(jnp.abs(a), b), jnp.where(a == 0, _NAN, _INF),
        jnp.where(a == 0, 0.0, _NAN))),
    "sinh": _complex_cases(jnp.sinh, lambda a, b: (
        _zero_or_inf_at_inf_nan(a, b), jnp.where(a == 0, 0.0, _INF), _NAN), odd=True),
    "tanh": _complex_cases(jnp.tanh, lambda a, b: (
        ((a == 0) & ~jnp.isfinite(b)) | (jnp.isinf(a) & jnp.isfinite(b)),
        jnp.where(a == 0, 0.0, 1.0), jnp.where(a == 0, _NAN, 0.0)), odd=True),
    "exp": _complex_cases(jnp.exp, lambda a, b: (
        _inf_nan(a, b), jnp.where(a > 0, _INF, 0.0), jnp.where(a > 0, _NAN, 0.0))),
    "expm1": _complex_cases(jnp.expm1, lambda a, b: (
        _inf_nan(a, b), jnp.where(a > 0, _INF, -1.0), jnp.where(a > 0, _NAN, 0.0))),
    "log": _complex_cases(jnp.log, _log_cases),
    "log1p": _complex_cases(jnp.log1p, _log_cases),
    "sqrt": _complex_cases(jnp.sqrt, lambda a, b: (
        jnp.isinf(a) & jnp.isnan(b), jnp.where(a > 0, _INF, _NAN),
        jnp.where(a > 0, _NAN, _INF))),
}
