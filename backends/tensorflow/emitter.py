"""The TensorFlow backend: each op becomes a `tf.custom_gradient` function.

``xp`` is `namespace` (the Array API standard written with core TF ops, so it never depends
on `tf.experimental.numpy.experimental_enable_numpy_behavior()`, a process-wide switch
crossgrad must not flip, and every op compiles under XLA) plus crossgrad's extensions. What
the checker drives is `harness`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf
from tensorflow.python.eager import forwardprop_util  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.eager import record  # pylint: disable=g-direct-tensorflow-import

from crossgrad.backends.common import base, kernel_core, op_core
from crossgrad.backends.tensorflow import namespace as array_api
from crossgrad.backends.tensorflow import array_object
from crossgrad.backends.tensorflow.namespace import _raw
from crossgrad.backends.tensorflow.namespace._dtypes import _const, _host_ints
from crossgrad.registry import broadcasting, namespace, validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.namespace import Namespace
from crossgrad.registry.opdef import OpDef

NAME = "tensorflow"
VERSION = tf.__version__
MODES = ("eager", "graph", "jit")
ARRAY_MODULES = ("tensorflow",)  # tf.Tensor, tf.Variable (protocol.Arrays).


def _as_tensor(x):
  """``tf.convert_to_tensor(x)``, skipped for a tensor (eagerly the call is not free)."""
  return x if isinstance(x, tf.Tensor) else tf.convert_to_tensor(x)


def _unbroadcast(x, like, /):
  x, like = _as_tensor(x), _as_tensor(like)
  x_shape, like_shape = x.shape, like.shape
  if x_shape.is_fully_defined() and like_shape.is_fully_defined():
    dims, like_dims = x_shape.as_list(), like_shape.as_list()
    if dims == like_dims:  # Nothing was broadcast.
      return x
    axes = list(broadcasting.sum_axes(dims, like_dims))
    if [1 if a in axes else d for a, d in enumerate(dims)] == like_dims:
      # No reshape (an op eagerly): a sum that keeps its axes has like's shape.
      return _raw.reduce_sum(x, _host_ints(axes), keepdims=True) if axes else x
    return tf.reshape(_raw.reduce_sum(x, _host_ints(axes)) if axes else x, _host_ints(like_dims))
  # Unknown sizes at trace time: let TF's own broadcast-gradient op find the axes.
  axes, _ = tf.raw_ops.BroadcastGradientArgs(s0=tf.shape(like), s1=tf.shape(x))
  out = tf.reshape(tf.reduce_sum(x, axis=axes), tf.shape(like))
  out.set_shape(like.shape)
  return out


def _take(x, indices, /, *, axis=None):
  """tf.gather under crossgrad's bad-index rule: zeros outside [0, n) on every device."""
  x, indices = tf.convert_to_tensor(x), tf.convert_to_tensor(indices)
  if indices.dtype not in (tf.int32, tf.int64):  # Any integer dtype, as the standard's:
    indices = tf.cast(indices, tf.int64)  # gather takes int16/32/64, and a size may not fit.
  rank = x.shape.rank
  axis = namespace.take_axis(NAME, rank, axis)
  size = x.shape[axis] if x.shape[axis] is not None else tf.shape(
      x, out_type=indices.dtype)[axis]
  if isinstance(size, int) and size == 0:  # No index is in [0, 0): zeros (gather raises).
    shape = x.shape[:axis].concatenate(indices.shape).concatenate(x.shape[axis + 1:])
    return tf.zeros(shape.as_list() if shape.is_fully_defined() else tf.concat(
        [tf.shape(x)[:axis], tf.shape(indices), tf.shape(x)[axis + 1:]], axis=0), x.dtype)
  # In range as one unsigned comparison: a negative index bitcasts past any size.
  unsigned = tf.uint32 if indices.dtype == tf.int32 else tf.uint64
  valid = tf.bitcast(indices, unsigned) < (
      _const(size, unsigned) if isinstance(size, int) else tf.cast(size, unsigned))
  # The gather reads clamped indices (TF's CPU gather raises past the end); the select
  # below zeros what they stood in for. A clamp, not a select on the indices: XLA fuses
  # a select into the gather as a slower kernel.
  last = _const(size - 1, indices.dtype) if isinstance(size, int) else size - 1
  in_range = tf.minimum(tf.maximum(indices, _const(0, indices.dtype)), last)
  picked = tf.gather(x, in_range, axis=axis)
  if indices.shape.is_fully_defined():  # Static: no shape ops (each is an op eagerly).
    mask_shape = _host_ints([1] * axis + indices.shape.as_list() + [1] * (rank - axis - 1))
  else:
    mask_shape = tf.concat([tf.ones([axis], tf.int32), tf.shape(indices),
                            tf.ones([rank - axis - 1], tf.int32)], axis=0)
  return tf.where(tf.reshape(valid, mask_shape), picked, _const(0, picked.dtype))


def _segment(name, reduce):
  def segment(data, segment_ids, /, num_segments):
    data, ids = _as_tensor(data), _as_tensor(segment_ids)
    if data.shape.rank is not None and ids.shape.rank is not None:
      namespace.check_segment_ids(NAME, name, data.shape.as_list(), ids.shape.as_list())
    # TensorFlow documents that rows with a negative id are dropped on every device
    # (ids >= num_segments raise on CPU), so the ids past the end are made -1 (one
    # comparison and one select: each is an op of its own eagerly).
    return reduce(data, tf.where(ids < num_segments, ids, _const(-1, ids.dtype)), num_segments)
  return segment


def _segment_min_propagating_nan(data, segment_ids, num_segments):
  """tf.math.unsorted_segment_min, but a NaN in a segment makes its minimum NaN, as in
  NumPy, JAX and torch (TF keeps or drops it by order eagerly, and drops it under XLA)."""
  data = tf.convert_to_tensor(data)
  out = tf.math.unsorted_segment_min(data, segment_ids, num_segments)
  if not data.dtype.is_floating:
    return out
  nans = tf.math.unsorted_segment_sum(tf.cast(tf.math.is_nan(data), data.dtype), segment_ids,
                                      num_segments)
  return tf.where(nans > 0, tf.constant(float("nan"), data.dtype), out)


xp = Namespace(NAME, array_api, extensions={
    "take": _take,
    "segment_sum": _segment("segment_sum", tf.math.unsorted_segment_sum),
    # Empty segments hold the dtype's largest value, as documented.
    "segment_min": _segment("segment_min", _segment_min_propagating_nan),
    # On and off values of the dtype: TF's defaults (1, 0) do not convert to bool.
    "one_hot": lambda x, num_classes, /, *, dtype: tf.one_hot(
        x, num_classes, on_value=_const(1, dtype), off_value=_const(0, dtype), dtype=dtype),
    "unbroadcast": _unbroadcast,
    "erf": lambda x, /: tf.math.erf(x),
})
array_object.use_namespace(xp)


def spec_of(x: Any) -> validation.ArraySpec:
  shape = x.shape
  return validation.ArraySpec(None if shape.rank is None else tuple(shape.as_list()),
                              tf.as_dtype(x.dtype).name)


def _key_of(x: Any) -> tuple:
  """What the op core's per-signature caches know a tensor by: its shape as TensorFlow
  keeps it (None where unknown) and dtype, without `spec_of`'s `TensorShape` work. Not a
  tensor (a backward's `tf.IndexedSlices`): its spec, a key no tensor's equals."""
  try:
    return x._shape_tuple(), x.dtype  # pylint: disable=protected-access
  except AttributeError:
    return spec_of(x)


def _body(fn: Callable[..., Any], namespace_: Any, args: Sequence[Any], params: dict) -> Any:
  """An op's forward or backward with the standard's array object inside
  (`array_object`), plain tensors outside."""
  if not array_object.enabled():
    return fn(namespace_, *args, **params)
  wrapped = array_object.wrap(tuple(args))
  return array_object.unwrap(fn(array_object.body_namespace(), *wrapped, **params))


# Its complex gradients are the conjugates of JAX's VJP: the op core converts a complex
# op's backward, the cross-check converts back (docs/dtypes.md).
CONJUGATE_COMPLEX_GRADIENTS = True
_CORE = op_core.Adapter(
    NAME, xp, spec_of, key_of=_key_of,
    # Reading variables here lets the tape route their gradients through the op.
    to_arrays=lambda inputs: [_as_tensor(x) for x in inputs],
    conjugate_complex=CONJUGATE_COMPLEX_GRADIENTS,
    make_body=lambda: op_core.EveryCall(_body))


def _primitive(core: op_core.OpCore) -> Callable[..., Any]:
  """The op as a `tf.custom_gradient` function, and under a forward accumulator
  `_forward_mode`'s (or the op's error where it declares no forward mode)."""
  op = core.op

  def forward(*inputs):
    result = core.forward(inputs)

    def grad(*upstream):
      return list(core.backward(result.residuals, upstream, result.specs,
                                lambda i: tf.zeros_like(result.outs[i])))

    return result.outputs, grad

  custom = tf.custom_gradient(forward)

  def run(*tensors):
    if not forwardprop_util.pack_tangents(tensors).tangents:
      return custom(*tensors)
    if f"{NAME}:jvp" in op.unsupported_modes:
      raise CrossgradError("no forward mode for this op", op=op.name, backend=NAME,
                           argument="tf.autodiff.ForwardAccumulator",
                           actual=op.unsupported_modes[f"{NAME}:jvp"],
                           hint="Differentiate it in reverse mode (tf.GradientTape)")
    return _forward_mode(op, forward, list(tensors))

  return run


def _forward_mode(op: OpDef, forward: Callable[..., Any], tensors: list) -> Any:
  """The op under a `tf.autodiff.ForwardAccumulator`: output tangents from the backward.

  `tf.custom_gradient` leaves the accumulator the tangents of the forward's own ops (an
  accumulator keeps the first tangent it computes for a tensor), so a surrogate gradient
  would be lost in forward mode. The outputs are passed on as fresh tensors: for tapes an
  identity of the custom-gradient outputs; for accumulators an op whose backward is the
  op's, which they transpose (the double-backward trick) into the op's forward-mode rule.
  The forward's ops stay recorded, so forward-over-reverse (a Hessian-vector product)
  still sees how the residuals move with the inputs.
  """
  saved = []

  def forward_and_save(*inputs):
    saved.append(forward(*inputs))
    return saved[-1]

  outputs = tf.custom_gradient(forward_and_save)(*tensors)
  flat = list(validation.as_tuple(outputs))
  with record.stop_recording():
    fresh = [tf.identity(o) for o in flat]
  record.record_operation_backprop_only(f"{op.name}_identity", fresh, flat, lambda *dy: dy)
  record.record_operation_forwardprop_only(f"{op.name}_forward_mode", fresh, tensors,
                                           saved[0][1], None)
  return tuple(fresh) if isinstance(outputs, tuple) else fresh[0]


def _kernel_guard(kernel, arrays: list, check: Callable[[list], None]) -> list:
  """`kernel_core.wrapper`'s guard: a `tf.custom_gradient` identity checking the
  cotangents (TensorFlow does not check what a custom gradient returns)."""
  del kernel

  @tf.custom_gradient
  def identity(*xs):
    def grad(*cotangents):
      check([tf.convert_to_tensor(c) for c in cotangents])
      return list(cotangents)
    return [tf.identity(x) for x in xs], grad

  return list(identity(*arrays))


get = base.make_get(NAME, op_core.emitter(_CORE, _primitive),
                    kernel_core.wrapper(_CORE, _kernel_guard))


def devices() -> list[str]:
  """Every logical device TensorFlow sees, as ``type:index`` (CPU first)."""
  found = [d.name.split("device:")[-1].lower() for d in tf.config.list_logical_devices()]
  return sorted(found, key=lambda n: (not n.startswith("cpu"), n))


def set_cpu_device_count(count: int) -> int:
  """Splits the host CPU into ``count`` logical devices; before TensorFlow first runs only
  (then it keeps its count, which this returns)."""
  cpu = tf.config.list_physical_devices("CPU")[0]
  try:
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
  except RuntimeError:  # Already initialised.
    return len(tf.config.list_logical_devices("CPU"))
  return count


def register_container(cls: type, flatten: Callable, unflatten: Callable) -> None:
  """TensorFlow's nest reads ``__tf_flatten__`` / ``__tf_unflatten__`` from the class."""
  del cls, flatten, unflatten
