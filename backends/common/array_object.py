"""The standard's array object as op bodies see it: one class that the body arrays of
TensorFlow, JAX and torch subclass (their ``array_object`` modules).

`Array` holds the framework's array (``native``) and defines every operator of the standard
and the conversions, each through a hook its subclass writes:

- ``_binary(name, other, reflected)``: an operator of two operands, named by the standard's
  function (``x + y`` is ``add``, ``x @ y`` ``matmul``; ``reflected``: ``other`` is the left
  operand), or NotImplemented for an operand it does not take;
- ``_unary(name)``: ``-x``, ``+x``, ``abs(x)``, ``~x`` (``negative``, ``positive``, ``abs``,
  ``bitwise_invert``);
- ``_index(key)``: ``x[key]`` as a native array (the standard's indexing);
- ``_observe()``: called where a value reaches Python or a plain array would behave
  otherwise (torch's probe records it; nothing elsewhere);
- ``_of(native)``: a native array as this framework's array object;
- ``_namespace()``: the body's ``xp`` that ``__array_namespace__`` gives.

Attributes whose frameworks differ (``shape``, ``device``, ``T``, ``mT``, ``to_device``) are
the subclass's; arrays that are immutable say so in ``IMMUTABLE`` (``x[i] = v`` raises it).
"""

from __future__ import annotations

import operator
from typing import Any


class Array:
  """A framework's array with the standard's array object (see the module docstring)."""

  __slots__ = ("native",)
  __array_priority__ = 100  # NumPy defers to our reflected operators.
  __hash__ = None  # Arrays compare elementwise: unhashable.
  IMMUTABLE = "these arrays are immutable"

  def __init__(self, native):
    self.native = native

  # Hooks (the module docstring).
  def _binary(self, name: str, other: Any, reflected: bool) -> Any:
    raise NotImplementedError

  def _unary(self, name: str) -> Any:
    raise NotImplementedError

  def _index(self, key: Any) -> Any:
    raise NotImplementedError

  def _namespace(self) -> Any:
    raise NotImplementedError

  def _observe(self) -> None:
    pass

  def _of(self, native: Any) -> Array:
    return type(self)(native)

  # Attributes.
  @property
  def dtype(self):
    return self.native.dtype

  @property
  def ndim(self):
    return self.native.ndim

  def __array_namespace__(self, *, api_version=None):
    del api_version
    return self._namespace()

  # Arithmetic operators.
  def __add__(self, other, /):
    return self._binary("add", other, False)

  def __radd__(self, other, /):
    return self._binary("add", other, True)

  def __sub__(self, other, /):
    return self._binary("subtract", other, False)

  def __rsub__(self, other, /):
    return self._binary("subtract", other, True)

  def __mul__(self, other, /):
    return self._binary("multiply", other, False)

  def __rmul__(self, other, /):
    return self._binary("multiply", other, True)

  def __truediv__(self, other, /):
    return self._binary("divide", other, False)

  def __rtruediv__(self, other, /):
    return self._binary("divide", other, True)

  def __floordiv__(self, other, /):
    return self._binary("floor_divide", other, False)

  def __rfloordiv__(self, other, /):
    return self._binary("floor_divide", other, True)

  def __mod__(self, other, /):
    return self._binary("remainder", other, False)

  def __rmod__(self, other, /):
    return self._binary("remainder", other, True)

  def __pow__(self, other, /):
    return self._binary("pow", other, False)

  def __rpow__(self, other, /):
    return self._binary("pow", other, True)

  def __matmul__(self, other, /):
    return self._binary("matmul", other, False)

  def __rmatmul__(self, other, /):
    return self._binary("matmul", other, True)

  def __neg__(self):
    return self._unary("negative")

  def __pos__(self):
    return self._unary("positive")

  def __abs__(self):
    return self._unary("abs")

  # Bitwise operators.
  def __invert__(self):
    return self._unary("bitwise_invert")

  def __and__(self, other, /):
    return self._binary("bitwise_and", other, False)

  def __rand__(self, other, /):
    return self._binary("bitwise_and", other, True)

  def __or__(self, other, /):
    return self._binary("bitwise_or", other, False)

  def __ror__(self, other, /):
    return self._binary("bitwise_or", other, True)

  def __xor__(self, other, /):
    return self._binary("bitwise_xor", other, False)

  def __rxor__(self, other, /):
    return self._binary("bitwise_xor", other, True)

  def __lshift__(self, other, /):
    return self._binary("bitwise_left_shift", other, False)

  def __rlshift__(self, other, /):
    return self._binary("bitwise_left_shift", other, True)

  def __rshift__(self, other, /):
    return self._binary("bitwise_right_shift", other, False)

  def __rrshift__(self, other, /):
    return self._binary("bitwise_right_shift", other, True)

  # Comparisons (Python reflects them by swapping: ``a < b`` is ``b > a``).
  def __eq__(self, other, /):
    return self._binary("equal", other, False)

  def __ne__(self, other, /):
    return self._binary("not_equal", other, False)

  def __lt__(self, other, /):
    return self._binary("less", other, False)

  def __le__(self, other, /):
    return self._binary("less_equal", other, False)

  def __gt__(self, other, /):
    return self._binary("greater", other, False)

  def __ge__(self, other, /):
    return self._binary("greater_equal", other, False)

  # Conversions: where values reach Python.
  def __bool__(self):
    self._observe()
    return bool(self.native)

  def __int__(self):
    self._observe()
    return int(self.native)

  def __float__(self):
    self._observe()
    return float(self.native)

  def __complex__(self):
    self._observe()
    return complex(self.native)

  def __index__(self):
    self._observe()
    return operator.index(self.native)

  def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    self._observe()
    given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
    return self.native.__dlpack__(**{k: v for k, v in given.items() if v is not None})

  def __dlpack_device__(self):
    return self.native.__dlpack_device__()

  def __iter__(self):  # Beyond the standard (which leaves iteration unspecified).
    return (self._of(a) for a in self.native)

  def __repr__(self):
    self._observe()
    return f"Array({self.native!r})"

  # Indexing.
  def __getitem__(self, key, /):
    return self._of(self._index(key))

  def __setitem__(self, key, value, /):
    """Deviation: the standard's arrays may be mutable; these are not (as jax.Array)."""
    raise TypeError(self.IMMUTABLE)
