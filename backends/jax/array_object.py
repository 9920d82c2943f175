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

import operator
from typing import Any

import jax

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


def _delegated(dunder):
  """jax.Array's operator ``dunder`` (NotImplemented for an operand it does not take)."""
  def apply(self, other):
    out = getattr(self.array, dunder)(other.array if type(other) is Array else other)
    return out if out is NotImplemented else Array(out)
  return apply


def _unary(dunder):
  """jax.Array's unary operator ``dunder``."""
  def apply(self):
    return Array(getattr(self.array, dunder)())
  return apply


def _standard(name, reflected=False):
  """The operator as ``xp``'s function ``name`` (the standard's special values)."""
  def apply(self, other):
    other = other.array if type(other) is Array else other
    args = (other, self.array) if reflected else (self.array, other)
    return Array(getattr(_XP[0], name)(*args))
  return apply


class Array:
  """A JAX array or tracer with the standard's array object (see the module docstring)."""

  __slots__ = ("array",)
  __array_priority__ = 100  # NumPy defers to our reflected operators.

  def __init__(self, array):
    self.array = array

  dtype = property(lambda self: self.array.dtype)
  shape = property(lambda self: self.array.shape)
  ndim = property(lambda self: self.array.ndim)
  size = property(lambda self: self.array.size)
  T = property(lambda self: Array(self.array.T))  # pylint: disable=invalid-name
  mT = property(lambda self: Array(self.array.mT))  # pylint: disable=invalid-name

  @property
  def device(self):
    return device_of(self.array)

  def to_device(self, device, /, *, stream=None):
    del stream
    return self if device is None else Array(jax.device_put(self.array, device))

  def __array_namespace__(self, *, api_version=None):
    del api_version
    return body_namespace()

  def __bool__(self):
    return bool(self.array)

  def __int__(self):
    return int(self.array)

  def __float__(self):
    return float(self.array)

  def __complex__(self):
    return complex(self.array)

  def __index__(self):
    return operator.index(self.array)

  def __array__(self, dtype=None, copy=None):
    del copy
    return self.array.__array__(dtype)

  def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
    return self.array.__dlpack__(**{k: v for k, v in given.items() if v is not None})

  def __dlpack_device__(self):
    return self.array.__dlpack_device__()

  def __iter__(self):
    return (Array(a) for a in self.array)

  def __repr__(self):
    return f"Array({self.array!r})"

  def __getitem__(self, key):
    return Array(self.array[unwrap(key)])

  def __setitem__(self, key, value):
    raise TypeError("JAX arrays are immutable: build the result with xp.where, xp.concat or "
                    "xp.segment_sum")

  __add__ = _delegated("__add__")
  __radd__ = _delegated("__radd__")
  __sub__ = _delegated("__sub__")
  __rsub__ = _delegated("__rsub__")
  __mul__ = _delegated("__mul__")
  __rmul__ = _delegated("__rmul__")
  __truediv__ = _delegated("__truediv__")
  __rtruediv__ = _delegated("__rtruediv__")
  __pow__ = _delegated("__pow__")
  __rpow__ = _delegated("__rpow__")
  __matmul__ = _delegated("__matmul__")
  __rmatmul__ = _delegated("__rmatmul__")
  __and__ = _delegated("__and__")
  __rand__ = _delegated("__rand__")
  __or__ = _delegated("__or__")
  __ror__ = _delegated("__ror__")
  __xor__ = _delegated("__xor__")
  __rxor__ = _delegated("__rxor__")
  __lshift__ = _delegated("__lshift__")
  __rlshift__ = _delegated("__rlshift__")
  __rshift__ = _delegated("__rshift__")
  __rrshift__ = _delegated("__rrshift__")
  __eq__ = _delegated("__eq__")
  __ne__ = _delegated("__ne__")
  __lt__ = _delegated("__lt__")
  __le__ = _delegated("__le__")
  __gt__ = _delegated("__gt__")
  __ge__ = _delegated("__ge__")
  # Deviation from jax.Array: // and % follow the standard's special values (xp).
  __floordiv__ = _standard("floor_divide")
  __rfloordiv__ = _standard("floor_divide", reflected=True)
  __mod__ = _standard("remainder")
  __rmod__ = _standard("remainder", reflected=True)
  __neg__ = _unary("__neg__")
  __pos__ = _unary("__pos__")
  __abs__ = _unary("__abs__")
  __invert__ = _unary("__invert__")
  __hash__ = None


# JAX array and tracer leaves of a tree (tuples, lists, dicts, named tuples) as `Array`, and
# back.
wrap = array_trees.mapper(jax.Array, Array)
unwrap = array_trees.mapper(Array, lambda a: a.array)


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
