"""The standard's array object for JAX, inside an op's forward and backward.

An op's body runs under a trace (the op is a ``jax.custom_jvp`` under ``jax.jit``), where JAX's
tracers lack ``device`` ("The 'device' attribute is not available on traced array") and
``to_device``. `Array` wraps the body's arrays with those two and ``__array_namespace__`` (the
body's ``xp``); everything else is ``jax.Array``'s own, which is the standard's already
(``shape`` a tuple, ``size``, ``ndim``, ``dtype``, ``.T``, ``.mT``, promotion, indexing), but
for ``//`` and ``%``, which take ``crossgrad.jax.xp``'s ``floor_divide`` and ``remainder``
(the standard's values with zero and infinite operands).

``device``: a concrete array's own device (an op that reads its input values runs op by op,
on concrete arrays); a tracer's is None, "the device the computation runs on": a trace does
not know it (JAX places a jitted computation by its committed inputs when it runs, after
tracing, and a tracer's abstract sharding names no device). Creation functions given
``device=None`` (``xp.zeros(..., device=x.device)``) make their arrays there and
``x.to_device(None)`` is ``x``, under ``jit``, ``vmap``, ``scan`` and ``checkpoint`` alike
(array_api_compat's ``device()`` gives None for tracers too).

The body namespace is ``crossgrad.jax.xp`` taking and giving `Array`; the backend wraps what
enters the body (`wrap`) and unwraps what it returns (`unwrap`), so ``custom_jvp``, callers and
checkers see JAX's arrays. The wrapper exists only while the body is traced: the jaxpr is the
same as with plain tracers.
"""

from __future__ import annotations

from typing import Any

import jax

from crossgrad.backends.common import array_object as common
from crossgrad.backends.common import array_trees
from crossgrad.backends.common import scoped

_ENABLED = scoped.Switch("crossgrad.backends.jax.array_object")


def native_arrays():
  """Op bodies traced in this scope see JAX's own arrays (for comparing with the wrapper)."""
  return _ENABLED.off()


def enabled() -> bool:
  return _ENABLED.on()


def device_of(x: Any) -> Any:
  """The standard's ``x.device`` for a JAX array (its device) or tracer (None: module
  docstring)."""
  return None if isinstance(x, jax.core.Tracer) else x.device


# The standard's operator names (`common.array_object`) as jax.Array's dunders.
_BINARY = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "truediv",
           "pow": "pow", "matmul": "matmul", "bitwise_and": "and", "bitwise_or": "or",
           "bitwise_xor": "xor", "bitwise_left_shift": "lshift",
           "bitwise_right_shift": "rshift"}
_DUNDERS = {**{name: (f"__{op}__", f"__r{op}__") for name, op in _BINARY.items()},
            **{name: (f"__{op}__", None) for name, op in (
                ("equal", "eq"), ("not_equal", "ne"), ("less", "lt"), ("less_equal", "le"),
                ("greater", "gt"), ("greater_equal", "ge"))}}
_UNARY = {"negative": "__neg__", "positive": "__pos__", "abs": "__abs__",
          "bitwise_invert": "__invert__"}
# Deviation from jax.Array: // and % follow the standard's special values (xp's functions).
_STANDARD = ("floor_divide", "remainder")


class Array(common.Array):
  """A JAX array or tracer with the standard's array object (see the module docstring)."""

  __slots__ = ()
  IMMUTABLE = ("JAX arrays are immutable: build the result with xp.where, xp.concat or "
               "xp.segment_sum")

  shape = property(lambda self: self.native.shape)
  size = property(lambda self: self.native.size)
  T = property(lambda self: Array(self.native.T))  # pylint: disable=invalid-name
  mT = property(lambda self: Array(self.native.mT))  # pylint: disable=invalid-name

  @property
  def device(self):
    return device_of(self.native)

  def to_device(self, device, /, *, stream=None):
    del stream
    return self if device is None else Array(jax.device_put(self.native, device))

  def __array__(self, dtype=None, copy=None):
    del copy
    return self.native.__array__(dtype)

  def _binary(self, name, other, reflected):
    other = other.native if type(other) is Array else other
    if name in _STANDARD:
      args = (other, self.native) if reflected else (self.native, other)
      return Array(getattr(_XP[0], name)(*args))
    # jax.Array's operator (NotImplemented for an operand it does not take).
    out = getattr(self.native, _DUNDERS[name][reflected])(other)
    return out if out is NotImplemented else Array(out)

  def _unary(self, name):
    return Array(getattr(self.native, _UNARY[name])())

  def _index(self, key):
    return self.native[unwrap(key)]

  def _namespace(self):
    return body_namespace()


# JAX array and tracer leaves of a tree (tuples, lists, dicts, named tuples) as `Array`, and
# back.
wrap = array_trees.mapper(jax.Array, Array)
unwrap = array_trees.mapper(Array, lambda a: a.native)


_XP: list[Any] = [None]  # crossgrad.jax.xp, set by the backend as it loads (`use_namespace`).
_BODY: list[Any] = [None]


def use_namespace(xp: Any) -> None:
  """Makes ``xp`` the namespace operators call and op bodies see (wrapped)."""
  _XP[0], _BODY[0] = xp, BodyNamespace(xp)


def plain_namespace(xp: Any) -> Any:
  """The namespace under a body's ``xp`` (plain JAX arrays in and out); others as they are."""
  return xp._xp if isinstance(xp, BodyNamespace) else xp  # pylint: disable=protected-access


def body_namespace() -> BodyNamespace:
  """The ``xp`` of an op's body (one instance)."""
  return _BODY[0]


class BodyNamespace(array_trees.LazyNamespace):
  """``crossgrad.jax.xp`` (or its ``linalg``/``fft``) taking and giving `Array`."""

  DEFAULT_NAME = "crossgrad.jax.xp"

  def made(self, name: str, value: Any) -> Any:
    if callable(value) and not isinstance(value, type) and name != "dtype":
      return array_trees.arrays_in_and_out(value, wrap, unwrap)
    return value
