"""The standard's array object for torch, inside an op's forward and backward.

`Array` wraps a ``torch.Tensor`` while an op's body runs: ``size`` is the number of elements
(an int; torch's ``Tensor.size`` is a method), ``shape`` a tuple, and it has ``ndim``,
``dtype`` (torch's dtypes, xp's), ``device``, ``to_device``, ``__array_namespace__``, ``.T``,
``.mT``, operators with the standard's type promotion and Python-scalar rules (torch's own
treats a 0-d tensor as a scalar: ``float32 array + float64 0-d array`` stays float32 there)
and the standard's indexing (integer arrays of any integer dtype, slices with negative steps).
`body_namespace` is the ``xp`` an op's body sees: the backend's ``xp`` taking and giving
`Array`. The backend wraps what enters the body (`wrap`) and unwraps what it returns
(`unwrap`), so ``torch.autograd.Function``, the caller and every checker see real tensors.

A plain Python object, not a ``torch.Tensor`` subclass: torch's own code calls
``Tensor.size()`` everywhere, which a ``size`` property would break, and a subclass would be
a tensor subclass for Dynamo, AOTAutograd and functorch to trace through. The wrapper instead
exists only while the body runs or is traced: under ``torch.compile`` Dynamo inlines it, and
the FX graph holds the same torch ops as with plain tensors. Eagerly, `probe` runs a body on
it recording where a plain tensor would behave otherwise or values reach Python
(`_diverged`), so that `plain_bodies` can leave the wrapper out where it changes
nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import operator
from typing import Any, Callable

import numpy as np
import torch

from crossgrad.backends.common import array_object as common
from crossgrad.backends.common import array_trees

# A list, where the other array objects use `scoped.Switch`: torch.compile reads it while
# tracing, and Dynamo cannot trace `contextvars.ContextVar.get` (a graph break).
_ENABLED = [True]


@contextlib.contextmanager
def native_arrays():
  """Op bodies run or traced in this scope see plain torch.Tensor (for measuring the
  wrapper)."""
  _ENABLED.append(False)
  try:
    yield
  finally:
    _ENABLED.pop()


def enabled() -> bool:
  return _ENABLED[-1]


# Whether the body probed in this thread or task (`probe`) did something where a plain
# torch.Tensor would behave otherwise than the standard's array object, or let values reach
# Python (they may steer its control flow); None while no probe runs.
_DIVERGED: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "crossgrad.backends.torch.array_object.diverged", default=None)


def _diverged() -> bool:
  """Records a divergence for the probe running on this thread; whether one runs (Dynamo
  never traces a probe)."""
  if torch.compiler.is_compiling() or _DIVERGED.get() is None:
    return False
  _DIVERGED.set(True)
  return True


def probe(run: Callable[[], Any]) -> tuple[Any, bool]:
  """``(run(), same)``: ``run`` runs an op body on `Array`; ``same``, whether plain tensors
  would have run it the same, no divergence (`_diverged`) recorded. What ``run`` raises
  propagates."""
  token = _DIVERGED.set(False)
  try:
    result = run()
    return result, not _DIVERGED.get()
  finally:
    _DIVERGED.reset(token)


class Array(common.Array):
  """A torch.Tensor with the Array API standard's array object (see the module docstring)."""

  __slots__ = ()

  @property
  def shape(self):
    return tuple(self.native.shape)

  @property
  def size(self):
    """The number of elements: an int (symbolic under dynamic shapes, never unknown)."""
    _diverged()  # torch's is a method.
    return math.prod(self.native.shape)

  @property
  def device(self):
    return self.native.device

  @property
  def T(self):  # pylint: disable=invalid-name
    # A matrix's own .T traces to the same graph as in plain-tensor code; torch deprecates .T
    # of other ranks, whose axes are reversed here with permute.
    if self.native.ndim == 2:
      return Array(self.native.T)
    _diverged()
    return Array(self.native.permute(tuple(range(self.native.ndim))[::-1]))

  @property
  def mT(self):  # pylint: disable=invalid-name
    return Array(self.native.mT)

  def to_device(self, device, /, *, stream=None):
    del stream
    _diverged()
    return Array(self.native.to(device))

  def __array__(self, dtype=None, copy=None):
    del copy
    _diverged()
    return np.asarray(self.native.detach().cpu().numpy(), dtype=dtype)

  def _binary(self, name, other, reflected):
    """Python's operator (so torch's, the very call plain code makes) where torch's promotion
    is the standard's (two arrays of one dtype; a Python int with a numeric array, a float
    with a floating or complex one), else ``xp``'s function (`_FAST`)."""
    fast = _FAST.get(name)
    if fast is not None:
      python_op, floating_only = fast
      t, kind = self.native, type(other)
      if kind is Array and not reflected:
        o = other.native
        if o.dtype == t.dtype and (not floating_only or t.is_floating_point() or t.is_complex()):
          return Array(python_op(t, o))
      elif kind is float and (t.is_floating_point() or t.is_complex()) or kind is int and (
          (t.is_floating_point() or t.is_complex()) if floating_only else t.dtype != torch.bool):
        return Array(python_op(other, t) if reflected else python_op(t, other))
    _diverged()
    if not _operand(other):
      return NotImplemented
    return _call(name, other, self) if reflected else _call(name, self, other)

  def _unary(self, name):
    """Python's operator on a floating or complex array, else ``xp``'s function (torch's
    ``-`` refuses bool; ``abs`` of a uint8 wraps)."""
    t = self.native
    if _inexact(t):
      return Array(_UNARY[name](t))
    _diverged()
    return _call(name, self)

  def _index(self, key):
    if _is_basic_key(key):
      return self.native[key]
    _diverged()
    tensor, key = _standard_key(self.native, key)
    return tensor[key]

  def _observe(self):
    _diverged()

  def _of(self, native):
    return Array(native)

  def _namespace(self):
    found = _BODY_ON[0](self.native.device)
    return probing(found) if _diverged() else found  # A probed body's own xp.

  def __setitem__(self, key, value):
    if not _is_basic_key(key):
      _diverged()
    tensor, key = _standard_key(self.native, key)
    if tensor is not self.native:  # A negative step reads a flipped copy.
      raise IndexError("__setitem__ with a negative slice step: write through a positive one")
    tensor[key] = value.native if type(value) is Array else value

  def __getattr__(self, name):
    # Only for a name the class lacks: a torch.Tensor might have it (``hasattr`` of it would
    # answer otherwise).
    _diverged()
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _is_basic_key(key) -> bool:
  """A key torch reads as the standard does: `_is_basic` alone or each entry of a tuple."""
  return type(key) is tuple and all(map(_is_basic, key)) or _is_basic(key)


def _is_basic(k) -> bool:
  """An index torch takes as the standard does: an integer, None, ..., a forward slice."""
  return (type(k) is int or k is None or k is Ellipsis
          or type(k) is slice and (k.step is None or type(k.step) is int and k.step > 0))


_INDEX_DTYPES = (torch.int64, torch.int32, torch.bool)


def _index(k):
  """One entry of a key as torch indexes by it: an integer array of any integer dtype (torch
  takes uint8 as a mask and wants int64 or int32) as int64."""
  if type(k) is Array:
    k = k.native
  if isinstance(k, np.ndarray):
    k = torch.from_numpy(k)
  if isinstance(k, torch.Tensor) and k.dtype not in _INDEX_DTYPES:
    return k.to(torch.int64)
  return k


def _consumed(k) -> int:
  """How many axes of the indexed array a key entry reads."""
  if k is None or k is Ellipsis:
    return 0
  if isinstance(k, torch.Tensor) and k.dtype == torch.bool:
    return k.ndim
  return 1


def _standard_key(x: torch.Tensor, key) -> tuple[torch.Tensor, Any]:
  """``(x', key')``: ``x'[key']`` is the standard's ``x[key]``. A slice with a negative step
  (torch refuses them) reads the flipped axis with a positive one."""
  key = tuple(map(_index, key if type(key) is tuple else (key,)))
  if all(type(k) is not slice or k.step is None or k.step > 0 for k in key):
    return x, key
  out, axis = list(key), 0
  for i, k in enumerate(key):
    if k is Ellipsis:
      axis = x.ndim - sum(map(_consumed, key[i + 1:]))
      continue
    if type(k) is slice and k.step is not None and k.step < 0:
      n = x.shape[axis]
      picked = range(*k.indices(n))
      x = torch.flip(x, (axis,))
      out[i] = (slice(n - 1 - picked[0], n - picked[-1], -k.step) if picked
                else slice(0, 0))
    axis += _consumed(k)
  return x, tuple(out)


def _call(name, *args):
  return wrap(getattr(_XP[0], name)(*unwrap(args)))


def _operand(other) -> bool:
  """Whether an operator takes ``other``: an array (ours, a tensor, NumPy's) or a Python
  scalar. Anything else gets NotImplemented, so Python raises its own TypeError."""
  return type(other) in (Array, bool, int, float, complex) or hasattr(other, "dtype")


def _inexact(t: torch.Tensor) -> bool:
  return t.is_floating_point() or t.is_complex()


# The operators Python (torch) computes at once where torch's promotion is the standard's:
# the standard's name, Python's operator and whether only floating and complex arrays take
# that path (``/`` of integers, ``**``, ``@``).
_FAST = {"add": (operator.add, False), "subtract": (operator.sub, False),
         "multiply": (operator.mul, False), "divide": (operator.truediv, True),
         "pow": (operator.pow, True), "matmul": (operator.matmul, True),
         "equal": (operator.eq, False), "not_equal": (operator.ne, False),
         "less": (operator.lt, False), "less_equal": (operator.le, False),
         "greater": (operator.gt, False), "greater_equal": (operator.ge, False)}
_UNARY = {"negative": operator.neg, "positive": operator.pos, "abs": operator.abs,
          "bitwise_invert": operator.invert}


def _augmented(dunder):
  """``x op= y`` as ``x = x op y``, a new array (torch's operator would write into x, which
  may be the caller's tensor)."""
  def apply(self, other):
    _diverged()
    return getattr(self, dunder)(other)
  return apply


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
            "xor", "lshift", "rshift"):
  setattr(Array, f"__i{_op}__", _augmented(f"__{_op}__"))


_CONTAINERS = (tuple, list, dict)

# torch.Tensor leaves of a tree (tuples, lists, dicts, named tuples) as `Array`, and back.
wrap = array_trees.mapper(torch.Tensor, Array)
unwrap = array_trees.mapper(Array, lambda a: a.native)


# Set by the torch backend as it loads (`use_namespace`).
_XP: list[Any] = [None]
_BODY_ON: list[Any] = [None]


def use_namespace(xp: Any, body_on) -> None:
  """``xp`` (the backend's) is what operators call; ``body_on(device)`` the body namespace
  whose creation functions default to ``device``, what ``__array_namespace__`` gives. The
  backend hands both over as it loads."""
  _XP[0], _BODY_ON[0] = xp, body_on


_STANDARD_DUNDERS = ("__array_namespace_info__",)


class BodyNamespace:
  """A torch ``xp`` (or its ``linalg``/``fft``) taking and giving `Array`. Every name is set
  when it is made: under ``torch.compile`` Dynamo reads plain attributes. ``probing``: its
  functions record (`_diverged`) the calls whose result's shape an array's values decide
  (`probing`)."""

  def __init__(self, xp: Any, probing: bool = False):
    self._xp = xp
    self.__name__ = getattr(xp, "__name__", "crossgrad.torch.xp")
    for name in dir(xp):
      if name.startswith("__") and name not in _STANDARD_DUNDERS:
        continue
      value = getattr(xp, name)
      if name in ("linalg", "fft"):
        value = BodyNamespace(value, probing)
      elif callable(value) and not isinstance(value, torch.dtype):
        value = _arrays_in_and_out(value)
        if probing:
          value = _recording_value_shapes(value, name in _VALUE_SHAPED)
      setattr(self, name, value)
    if hasattr(xp, "__array_api_version__"):
      self.__array_api_version__ = xp.__array_api_version__

  def __getattr__(self, name: str) -> Any:
    return getattr(self._xp, name)  # Not set above: the namespace's own answer or error.

  def __dir__(self):
    return dir(self._xp)


def _arrays_in_and_out(fn):
  @functools.wraps(fn)  # fn's name, doc and signature (inspect.signature follows __wrapped__).
  def call(*args, **kwargs):
    # The common arguments (arrays, numbers) inline: this runs on every xp call of an op.
    args = [a.native if type(a) is Array else unwrap(a) if type(a) in _CONTAINERS else a
            for a in args]
    out = fn(*args, **unwrap(kwargs)) if kwargs else fn(*args)
    return Array(out) if type(out) is torch.Tensor else wrap(out)
  return call


# Results whose shape the values of an array argument decide.
_VALUE_SHAPED = frozenset(("nonzero", "unique_all", "unique_counts", "unique_inverse",
                           "unique_values", "repeat"))


def _recording_value_shapes(fn, value_shaped: bool):
  """``fn`` recording a divergence where its result's shape may follow values: always
  (``value_shaped``: ``nonzero``, ``unique_*``, ``repeat``) or when a 0-d integer array
  gives a count, shape entry or axis (torch reads its value)."""
  @functools.wraps(fn)
  def call(*args, **kwargs):
    if value_shaped or _integer_scalar(args) or kwargs and _integer_scalar(kwargs.values()):
      _diverged()
    return fn(*args, **kwargs)
  return call


def _integer_scalar(values) -> bool:
  """Whether ``values`` (or a tuple or list among them) hold a 0-d integer or bool `Array`."""
  for v in values:
    kind = type(v)
    if kind is Array and v.native.ndim == 0 and not _inexact(v.native) or (
        (kind is tuple or kind is list) and _integer_scalar(v)):
      return True
  return False


_PROBING: dict[BodyNamespace, BodyNamespace] = {}


def probing(namespace_: BodyNamespace) -> BodyNamespace:
  """``namespace_`` for a probe (`probe`): its functions record the calls whose result's
  shape values decide (`BodyNamespace`'s ``probing``)."""
  found = _PROBING.get(namespace_)
  if found is None:
    plain = namespace_._xp  # pylint: disable=protected-access
    found = _PROBING[namespace_] = BodyNamespace(plain, probing=True)
  return found


def body_namespace(device: Any = "cpu") -> BodyNamespace:
  """The ``xp`` an op's body gets for arrays on ``device``."""
  return _BODY_ON[0](torch.device(device))
