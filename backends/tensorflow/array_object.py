"""The standard's array object for TensorFlow, inside an op's forward and backward.

`Array` wraps a ``tf.Tensor`` while an op's body runs: its operators follow the standard's type
promotion and Python-scalar rules (they are ``crossgrad.tensorflow.xp``'s functions: ``labels
== xp.arange(n)`` with int32 labels compares as int64), ``shape`` is a tuple (None for an
unknown dimension), and it has ``.T``, ``.mT``, ``ndim``, ``size``, ``dtype`` (xp's dtype
objects, TensorFlow's own), ``device``, ``to_device``, ``__array_namespace__`` and the
standard's indexing (integers, slices, ``...``, ``None``, integer arrays of any integer dtype
and a boolean mask). `body_namespace` is the ``xp`` an op's body sees: ``crossgrad.tensorflow.xp``
taking and giving `Array`. The backend wraps what enters the body (`wrap`) and unwraps what it
returns (`unwrap`), so ``tf.custom_gradient`` and every caller see real tensors; TensorFlow's
global NumPy behaviour is never switched on. Under ``tf.function`` the wrapper exists only while
tracing: the graph holds the same TensorFlow ops, but for the transposes ``matmul`` takes as
its ``transpose_a``/``transpose_b`` (`MatrixTransposed`).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import tensorflow as tf

from crossgrad.backends.common import array_object as common
from crossgrad.backends.common import array_trees
from crossgrad.backends.common import scoped
from crossgrad.backends.tensorflow.namespace._linalg import matmul_transposed
from crossgrad.backends.tensorflow.namespace._manipulation import take

_ENABLED = scoped.Switch("crossgrad.backends.tensorflow.array_object")


def native_arrays():
  """Op bodies traced or run in this scope see plain tf.Tensor (for measuring the wrapper)."""
  return _ENABLED.off()


def enabled() -> bool:
  return _ENABLED.on()


class Array(common.Array):
  """A tf.Tensor with the Array API standard's array object (see the module docstring)."""

  __slots__ = ()
  IMMUTABLE = ("crossgrad's TensorFlow arrays are immutable (as jax.Array): build the result "
               "with xp.where, xp.concat or xp.segment_sum")

  # Attributes.
  @property
  def shape(self):
    dims = self.native.shape
    return None if dims.rank is None else tuple(dims.as_list())

  @property
  def ndim(self):
    return self.native.shape.rank

  @property
  def size(self):
    shape = self.shape
    return None if shape is None or None in shape else int(np.prod(shape, dtype=np.int64))

  @property
  def device(self):
    return self.native.device

  @property
  def T(self):  # pylint: disable=invalid-name
    if self.ndim == 2:
      return matrix_transpose(self)
    return _call("permute_dims", self, tuple(range(self.ndim))[::-1])

  @property
  def mT(self):  # pylint: disable=invalid-name
    return matrix_transpose(self)

  def to_device(self, device, /, *, stream=None):
    del stream
    with tf.device(device):
      return Array(tf.identity(self.native))

  # Operators: TensorFlow's op at once where no promotion is needed (`_fast`), else xp's
  # function (the standard's promotion). Integers divide through xp's divide (bool too).
  def _binary(self, name, other, reflected):
    if name == "matmul":
      return matmul(other, self) if reflected else matmul(self, other)
    fast = _FAST.get(name)
    if fast is not None:
      tf_fn, floating_only = fast
      return (_fast_reflected if reflected else _fast)(self, other, tf_fn, name, floating_only)
    return (_by_xp_reflected if reflected else _by_xp)(self, other, name)

  def _unary(self, name):
    t = self.native
    if name == "negative" and t.dtype.is_floating:
      return Array(tf.math.negative(t))
    return _call(name, self)

  # Deviation: no in-place operators (``__iadd__``...): the arrays are immutable, so
  # ``x += y`` rebinds ``x`` to ``x + y``, as for jax.Array.

  # Conversions. Deviation: eagerly only, as for tf.Tensor (a graph has no values to give).
  def __complex__(self):
    return complex(self.native.numpy())

  def __index__(self):
    return operator.index(self.native.numpy())

  def __array__(self, dtype=None, copy=None):  # Beyond the standard: NumPy's protocol.
    del copy
    return np.asarray(self.native, dtype=dtype)

  def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    """TensorFlow's DLPack capsule. Deviation: a legacy, unversioned capsule whatever
    ``max_version`` asks (the standard lets a producer give one); ``dl_device`` (1, 0)
    copies to the CPU, ``copy=True`` copies the buffer."""
    del stream, max_version
    tensor = self.native
    if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
      if tuple(dl_device) != (1, 0):
        raise BufferError(f"__dlpack__: cannot export to DLPack device {dl_device}")
      with tf.device("CPU:0"):
        tensor = tf.raw_ops.DeepCopy(x=tensor)
    elif copy:
      tensor = tf.raw_ops.DeepCopy(x=tensor)
    return tf.experimental.dlpack.to_dlpack(tensor)

  def __dlpack_device__(self):
    """(1, 0) for the CPU, (2, i) for GPU i (DLPack's kDLCPU, kDLCUDA)."""
    spec = tf.DeviceSpec.from_string(self.native.device)
    return (2, spec.device_index or 0) if spec.device_type == "GPU" else (1, 0)

  def __tf_tensor__(self, dtype=None, name=None):  # Beyond the standard: TensorFlow's.
    return tf.convert_to_tensor(self.native, dtype=dtype, name=name)

  def _of(self, native):
    return Array(native)

  def _index(self, key):
    if type(key) is tuple and all(type(k) in _BASIC for k in key) or type(key) in _BASIC:
      return self.native[key]  # Basic indexing: tf.Tensor's own.
    return _getitem(self.native, key)

  def _namespace(self):
    return body_namespace()


_BASIC = (int, slice, type(Ellipsis), type(None))


def _call(name, *args):
  return wrap(getattr(_namespace(), name)(*unwrap(args)))


def _operand(other) -> bool:
  """Whether an operator takes ``other``: an array (ours, a tensor, NumPy's) or a Python
  scalar. Anything else (None, a string) gets NotImplemented, so Python raises its "unsupported
  operand type(s)" TypeError, as for NumPy, not an error from inside the namespace."""
  return type(other) in (Array, bool, int, float, complex) or hasattr(other, "dtype")


def _by_xp(self, other, name):
  """``self <op> other`` by xp's ``name`` (the standard's promotion), or NotImplemented."""
  return _call(name, self, other) if _operand(other) else NotImplemented


def _by_xp_reflected(self, other, name):
  """``other <op> self`` by xp's ``name``, or NotImplemented."""
  return _call(name, other, self) if _operand(other) else NotImplemented


def _same_dtype(t, other):
  """``other`` as a tensor of ``t``'s dtype when that is the standard's result (an array of
  the same dtype, or a Python float or int meeting a floating ``t``); else None."""
  if type(other) is Array:
    return other.native if other.native.dtype == t.dtype else None
  if type(other) in (float, int) and t.dtype.is_floating:
    return tf.constant(other, t.dtype)
  return None


def _fast(self, other, tf_fn, name, floating_only=False):
  """``self <op> other``: TensorFlow's ``tf_fn`` at once where no promotion is needed (the
  graph is the same: xp's ``name`` calls that op after promoting), else `_by_xp`."""
  t = self.native
  if type(other) is float and t.dtype.is_floating:
    # TensorFlow converts a float after a tensor to its dtype, as tf.constant(other,
    # t.dtype) does, but in C: a Python call less per scalar operand eagerly.
    return Array(tf_fn(t, other))
  if not floating_only or t.dtype.is_floating:
    o = _same_dtype(t, other)
    if o is not None:
      return Array(tf_fn(t, o))
  return _by_xp(self, other, name)


def _fast_reflected(self, other, tf_fn, name, floating_only=False):
  """``other <op> self``, as `_fast`."""
  t = self.native
  if not floating_only or t.dtype.is_floating:
    o = _same_dtype(t, other)
    if o is not None:
      return Array(tf_fn(o, t))
  return _by_xp_reflected(self, other, name)


# Operators TensorFlow computes at once where no promotion is needed: the standard's name,
# TensorFlow's op and whether only floating arrays take that path (`_fast`).
_FAST = {"add": (tf.math.add, False), "subtract": (tf.math.subtract, False),
         "multiply": (tf.math.multiply, False), "divide": (tf.math.truediv, True),
         "equal": (tf.math.equal, False), "not_equal": (tf.math.not_equal, False),
         "less": (tf.math.less, False), "less_equal": (tf.math.less_equal, False),
         "greater": (tf.math.greater, False), "greater_equal": (tf.math.greater_equal, False)}


class MatrixTransposed(Array):
  """The standard's ``matrix_transpose`` of the tensor ``transposed_of``, made when its
  ``native`` is first read: `matmul` multiplies by it with TensorFlow's
  ``transpose_a``/``transpose_b`` instead, one op where a transpose and a matmul were
  (eagerly, transposing a small matrix costs more than the matmul)."""

  __slots__ = ("transposed_of",)

  def __init__(self, transposed_of):  # pylint: disable=super-init-not-called
    self.transposed_of = transposed_of

  @property
  def native(self):
    try:
      return Array.native.__get__(self)
    except AttributeError:  # Not made yet.
      tensor = _namespace().matrix_transpose(self.transposed_of)
      Array.native.__set__(self, tensor)
      return tensor

  @property
  def dtype(self):
    return self.transposed_of.dtype

  @property
  def shape(self):
    shape = Array(self.transposed_of).shape
    return None if shape is None else (*shape[:-2], shape[-1], shape[-2])

  @property
  def ndim(self):
    return self.transposed_of.shape.rank


def matrix_transpose(x, /):
  """The standard's ``matrix_transpose`` of a body array, lazily (`MatrixTransposed`)."""
  if type(x) is MatrixTransposed:
    return Array(x.transposed_of)
  if type(x) is not Array or x.ndim is None or x.ndim < 2:
    return _call("matrix_transpose", x)  # Its error, or a transpose of unknown rank.
  return MatrixTransposed(x.native)


def matmul(x1, x2, /):
  """The standard's ``matmul`` of body arrays, a `MatrixTransposed` operand taken as
  TensorFlow's ``transpose_a``/``transpose_b``."""
  a, b = (x.transposed_of if type(x) is MatrixTransposed else None for x in (x1, x2))
  if a is None and b is None:
    return _call("matmul", x1, x2)
  return Array(matmul_transposed(unwrap(x1) if a is None else a,
                                 unwrap(x2) if b is None else b, a is not None, b is not None))


_LAZY = {"matmul": matmul, "matrix_transpose": matrix_transpose}


def _is_array_index(k) -> bool:
  return isinstance(k, (tf.Tensor, np.ndarray)) and (
      k.shape.rank != 0 if isinstance(k, tf.Tensor) else k.ndim != 0 or k.dtype == bool
  ) or isinstance(k, tf.Tensor) and k.dtype == tf.bool


def _is_integer(k) -> bool:
  return isinstance(k, (int, np.integer)) and not isinstance(k, bool) or isinstance(
      k, tf.Tensor) and k.dtype.is_integer


def _getitem(x, key):
  """The standard's indexing of ``x``: tf.Tensor's basic indexing (0-D integer arrays of any
  integer dtype), one boolean mask, or integer arrays and integers on the leading axes
  (broadcast together; negative ones count from the end)."""
  key = key if isinstance(key, tuple) else (key,)
  key = tuple(k.native if isinstance(k, Array) else k for k in key)
  arrays = [i for i, k in enumerate(key) if _is_array_index(k)]
  if not arrays:
    return x[tuple(tf.cast(k, tf.int64) if isinstance(k, tf.Tensor) else k for k in key)]
  first = tf.convert_to_tensor(key[arrays[0]])
  if first.dtype == tf.bool and len(key) == 1:  # A 0-D mask adds an axis of size 1 or 0.
    return tf.boolean_mask(x[None], first[None]) if first.shape.rank == 0 else tf.boolean_mask(
        x, first)
  # Integers beside integer arrays are 0-D integer arrays (broadcast with the others).
  arrays = [i for i, k in enumerate(key) if i in arrays or _is_integer(k)]
  rest = key[len(arrays):]
  if arrays != list(range(len(arrays))) or first.dtype == tf.bool or any(
      k is not Ellipsis and k != slice(None) for k in rest):
    raise IndexError("integer-array indexing takes integer arrays on the leading axes, "
                     "followed by full slices only; a boolean mask indexes alone")
  indices = [tf.cast(tf.convert_to_tensor(key[i]), tf.int64) for i in arrays]
  if len(indices) == 1:
    # xp.take (tf.gather): TF's forward mode and nested tapes differentiate its gradient, not
    # gather_nd's by one index per element ("'IndexedSlices' object has no attribute '_id'").
    return take(x, indices[0], axis=0)
  shape = indices[0].shape
  for i in indices[1:]:
    shape = tf.broadcast_static_shape(shape, i.shape)
  stacked = tf.stack([tf.broadcast_to(i, shape) for i in indices], axis=-1)
  sizes = tf.shape(x, out_type=tf.int64)[:len(indices)]
  return tf.gather_nd(x, tf.where(stacked < 0, stacked + sizes, stacked))


_TYPES = (tf.Tensor, tf.Variable)


def wrap(tree: Any) -> Any:
  """tf.Tensor leaves of ``tree`` (tuples, lists, dicts, namedtuples) as `Array`."""
  if isinstance(tree, _TYPES):
    return Array(tree)
  kind = type(tree)
  if kind is tuple or kind is list:  # A list, not a generator: this runs on every op call.
    return kind([wrap(t) for t in tree])
  if kind is dict:
    return {k: wrap(v) for k, v in tree.items()}
  if isinstance(tree, tuple) and hasattr(tree, "_fields"):
    return kind(*(wrap(t) for t in tree))
  return tree


def unwrap(tree: Any) -> Any:
  """`Array` leaves of ``tree`` as their tf.Tensor."""
  kind = type(tree)
  if kind is Array or kind is MatrixTransposed:
    return tree.native
  if kind is tuple or kind is list:
    return kind([t.native if type(t) is Array else unwrap(t) for t in tree])
  if kind is dict:
    return {k: unwrap(v) for k, v in tree.items()}
  if isinstance(tree, tuple) and hasattr(tree, "_fields"):
    return kind(*(unwrap(t) for t in tree))
  return tree


_XP = [None]


def use_namespace(xp: Any) -> None:
  """Makes ``xp`` (``crossgrad.tensorflow.xp``, handed over by the backend as it loads) the
  namespace the array's methods and op bodies call."""
  _XP[0] = xp
  _BODY[0] = None


def _namespace() -> Any:
  if _XP[0] is None:
    raise RuntimeError("the TensorFlow backend is not loaded: load it (crossgrad.tensorflow) "
                       "before using its array object")
  return _XP[0]


class BodyNamespace(array_trees.LazyNamespace):
  """``crossgrad.tensorflow.xp`` (or its ``linalg``/``fft``) taking and giving `Array`."""

  DEFAULT_NAME = "crossgrad.tensorflow.xp"

  def made(self, name: str, value: Any) -> Any:
    if name in _LAZY:
      return _LAZY[name]
    if callable(value) and not isinstance(value, tf.DType):
      return array_trees.arrays_in_and_out(value, wrap, unwrap)
    return value


_BODY = [None]


def body_namespace() -> BodyNamespace:
  """The ``xp`` of an op's body (one instance)."""
  if _BODY[0] is None:
    _BODY[0] = BodyNamespace(_namespace())
  return _BODY[0]
