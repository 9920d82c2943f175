"""The TensorFlow backend: each op becomes a `tf.custom_gradient` function.

``xp`` is `array_api` (the Array API standard written with core TF ops, so it
never depends on `tf.experimental.numpy.experimental_enable_numpy_behavior()`, a
process-wide switch crossgrad must not flip, and every op compiles under XLA) plus
crossgrad's extensions.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import forwardprop_util  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.eager import record  # pylint: disable=g-direct-tensorflow-import

from crossgrad.backends.common import base, kernel_core, op_core
from crossgrad.backends.tensorflow import namespace as array_api
from crossgrad.backends.tensorflow import array_object, export
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
EXTRA_MODES = ("saved_model",)  # Run when asked for; other round trips join by `add_round_trip`.
TRANSFORMS = ("vectorized_map",)
UNSUPPORTED_CHECKS: dict[tuple[str, str], str] = {}
# Round trips from other frameworks (`add_round_trip`): mode -> (the op's TF function, the
# precision scope of its inputs).
_ROUND_TRIPS: dict[str, tuple[Callable[[OpDef, dict], Callable[..., Any]],
                              Callable[[Sequence[Any]], Any]]] = {}


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


def add_round_trip(mode: str, function: Callable[[OpDef, dict], Callable[..., Any]],
                   precision_scope: Callable[[Sequence[Any]], Any]) -> None:
  """Lets `evaluate` and `evaluate_higher_order` take export mode ``mode``, whose TF function
  another framework makes: ``function(op, params)``, run inside ``precision_scope(inputs)``
  (`protocol.RoundTrips`). The checker, which loads every backend, adds ``jax2tf`` this way."""
  _ROUND_TRIPS[mode] = (function, precision_scope)


def _function(op: OpDef, params: dict, inputs: Sequence[np.ndarray], mode: str):
  """The op's TF function in ``mode``: the emitted op, its SavedModel round trip, or
  another framework's op (`add_round_trip`)."""
  if mode == "saved_model":
    return export.saved_model_round_trip(get(op, **params), inputs)
  if mode in _ROUND_TRIPS:
    return _ROUND_TRIPS[mode][0](op, params)
  return get(op, **params)


def _run_on(device: str, mode: str, arrays: Any, run: Callable[..., Any], op: OpDef, params,
            inputs, *what: Any):
  """``run(fn, *arrays)`` as tensors on ``device``: eagerly, in a graph or under XLA (the
  export round trips run eagerly); results as NumPy (None stays None). The graph of
  (emitted function, mode, device, input shapes and dtypes, ``what`` it runs) is traced
  once (`base.compiled`), in a function of its own (`base.own_code`): TF sees no function
  retrace, so checks at several sizes do not warn of retracing."""
  fn = _function(op, params, inputs, mode)
  call = lambda *a: run(fn, *a)  # pylint: disable=unnecessary-lambda-assignment
  if mode in ("graph", "jit"):
    signature = tuple(None if a is None else (np.shape(a), np.result_type(a))
                      for a in tf.nest.flatten(arrays))
    call = base.compiled((fn, mode, device, signature, *what), lambda: tf.function(
        base.own_code(call), jit_compile=(mode == "jit"), autograph=False))
  scope = (_ROUND_TRIPS[mode][1](inputs) if mode in _ROUND_TRIPS
           else contextlib.nullcontext())
  with tf.device("/device:" + device.upper()), scope:
    tensors = tf.nest.map_structure(lambda a: None if a is None else tf.constant(a), arrays)
    out = call(*tensors)
  return tf.nest.map_structure(lambda t: None if t is None else _host(t), out)


def _host(t) -> np.ndarray:
  """A result as NumPy. A tangent or gradient may come as tf.IndexedSlices (of a gather):
  densified. Read as a view (read-only, as tensors are), not a copy (`.numpy()`): a copy
  per result is most of the check's own cost at a million elements. A 0-d one by
  `.numpy()`: TF hands NumPy a 0-d bfloat16 tensor as a scalar, which `np.asarray` refuses
  ("object __array__ method not producing an array")."""
  t = tf.convert_to_tensor(t)
  return np.asarray(t) if t.shape.rank else np.asarray(t.numpy())


def _vjp(fn: Callable[..., Any], diff: Sequence[int], args: Sequence[Any],
         cots: Sequence[Any]):
  """Outputs (a tuple) and the cotangents of ``args[diff]`` for output cotangents ``cots``."""
  with tf.GradientTape() as tape:
    diff_args = [args[i] for i in diff]
    tape.watch(diff_args)
    outs = validation.as_tuple(fn(*args))
  pairs = [(o, c) for o, c in zip(outs, cots) if c is not None]
  grads = tape.gradient([o for o, _ in pairs], diff_args,
                        output_gradients=[c for _, c in pairs],
                        unconnected_gradients=tf.UnconnectedGradients.ZERO)
  return outs, grads


def evaluate(op: OpDef, params: dict, inputs: Sequence[np.ndarray], cotangent: Sequence[Any],
             *, device: str = "cpu:0", mode: str = "jit"):
  """Outputs (as a tuple) and input cotangents, eagerly, in a graph, under XLA, or through
  an export round trip (``saved_model``, ``jax2tf``)."""
  op_core.check_run(NAME, op, mode, MODES + EXTRA_MODES + tuple(_ROUND_TRIPS), inputs)
  outs, grads = _run_on(device, mode, (list(inputs), list(cotangent)),
                        lambda fn, a, c: _vjp(fn, op.diff_argnums, a, c), op, params, inputs)
  return tuple(outs), base.merge_cotangents(op, grads)


def evaluate_higher_order(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                          cotangent: Sequence[Any], tangents: Sequence[Any] | None,
                          direction: Sequence[Any] | None, *, device: str = "cpu:0",
                          mode: str = "jit"):
  """In one program: the output tangents for input ``tangents`` under a
  `tf.autodiff.ForwardAccumulator`, and the gradient of <vjp(cotangent), direction> with
  respect to each input through nested gradient tapes; None for integer outputs, inputs
  without a gradient, and what is not asked for (``tangents`` or ``direction`` None)."""
  op_core.check_run(NAME, op, mode, MODES + EXTRA_MODES + tuple(_ROUND_TRIPS), inputs)
  diff = op.diff_argnums

  def run(fn, args, cots, tans, dirs):
    diff_args = [args[i] for i in diff]
    out_tangents = second = None
    if tans is not None:
      with tf.autodiff.ForwardAccumulator(diff_args, [tans[i] for i in diff]) as acc:
        outs = validation.as_tuple(fn(*args))
      out_tangents = [acc.jvp(o, unconnected_gradients=tf.UnconnectedGradients.ZERO)
                      if o.dtype.is_floating or o.dtype.is_complex else None
                      for o in outs]
    if dirs is not None:  # The gradient of <vjp, direction>: the vjp of the vjp.
      with tf.GradientTape() as outer:
        outer.watch(diff_args)
        grads = [tf.convert_to_tensor(g) for g in _vjp(fn, diff, args, cots)[1]]
      # None where the backward reads an input only through a mask (leaky_relu): its
      # zeros are made below, on the host; made in the program, TF folds them into a
      # constant of the input's size, which XLA then compiles (1M elements: 16 MB more).
      second = outer.gradient(grads, diff_args, output_gradients=[dirs[i] for i in diff])
    return out_tangents, second

  arrays = (list(inputs), list(cotangent), None if tangents is None else list(tangents),
            None if direction is None else list(direction))
  out_tangents, second = _run_on(device, mode, arrays, run, op, params, inputs,
                                 "higher_order")
  if second is not None:
    second = [np.zeros(np.shape(inputs[i]), np.result_type(inputs[i])) if g is None else g
              for i, g in zip(diff, second)]
  return (None if out_tangents is None else tuple(out_tangents),
          None if second is None else base.merge_cotangents(op, second))


def evaluate_transformed(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                         cotangent: Sequence[Any], *, device: str = "cpu:0",
                         transforms: Sequence[str] = TRANSFORMS):
  """Outputs and input cotangents of a batch (axis 0 of every array) per transformation:
  the per-example VJP under `tf.vectorized_map` in a `tf.function`, as users call it: where
  an op has no vectorization rule (pfor; e.g. the bitcasts of `xp.sort`'s total order) TF
  falls back to a loop over the batch."""
  for transform in transforms:
    base.check_mode(NAME, transform, TRANSFORMS)
  validation.check_input_count(op, NAME, inputs)
  present = [k for k, c in enumerate(cotangent) if c is not None]
  n_outputs = len(cotangent)  # Not the arrays: the compiled runner outlives this call.

  def run(fn, args, cots):
    def example(elems):
      args, given = elems
      cots = [None] * n_outputs
      for k, c in zip(present, given):
        cots[k] = c
      return _vjp(fn, op.diff_argnums, args, cots)
    return tf.vectorized_map(example, (args, cots))

  outs, grads = _run_on(device, "graph", (list(inputs), [cotangent[k] for k in present]), run,
                        op, params, inputs, ("vectorized_map", len(cotangent), tuple(present)))
  return {t: (tuple(outs), base.merge_cotangents(op, grads)) for t in transforms}


@contextlib.contextmanager
def precision_scope(arrays: Sequence[Any], float32: str | None = None):
  """TensorFlow keeps every dtype as it is; with ``float32="highest"``, TensorFloat-32
  execution (on by default on Ampere and later GPUs) is off for the scope."""
  del arrays
  if float32 != "highest":
    yield
    return
  enabled = tf.config.experimental.tensor_float_32_execution_enabled()
  tf.config.experimental.enable_tensor_float_32_execution(False)
  try:
    yield
  finally:
    tf.config.experimental.enable_tensor_float_32_execution(enabled)


def register_container(cls: type, flatten: Callable, unflatten: Callable) -> None:
  """TensorFlow's nest reads ``__tf_flatten__`` / ``__tf_unflatten__`` from the class."""
  del cls, flatten, unflatten
