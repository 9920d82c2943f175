"""The TensorFlow backend: each op becomes a `tf.custom_gradient` function.

``xp`` is `tensorflow_array_api` (the Array API standard written with core TF ops, so it
never depends on `tf.experimental.numpy.experimental_enable_numpy_behavior()`, a
process-wide switch crossgrad must not flip, and every op compiles under XLA) plus
crossgrad's extensions.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from crossgrad.backends import base
from crossgrad.backends import tensorflow_array_api
from crossgrad.registry import broadcasting, namespace, validation
from crossgrad.registry.namespace import Namespace
from crossgrad.registry.opdef import OpDef

NAME = "tensorflow"
VERSION = tf.__version__
MODES = ("eager", "graph", "jit")


def _unbroadcast(x, like, /):
  x, like = tf.convert_to_tensor(x), tf.convert_to_tensor(like)
  if x.shape.is_fully_defined() and like.shape.is_fully_defined():
    axes = list(broadcasting.sum_axes(x.shape.as_list(), like.shape.as_list()))
    return tf.reshape(tf.reduce_sum(x, axis=axes) if axes else x, like.shape)
  # Unknown sizes at trace time: let TF's own broadcast-gradient op find the axes.
  axes, _ = tf.raw_ops.BroadcastGradientArgs(s0=tf.shape(like), s1=tf.shape(x))
  out = tf.reshape(tf.reduce_sum(x, axis=axes), tf.shape(like))
  out.set_shape(like.shape)
  return out


def _take(x, indices, /, *, axis=None):
  """tf.gather under crossgrad's bad-index rule: zeros outside [0, n) on every device."""
  x, indices = tf.convert_to_tensor(x), tf.convert_to_tensor(indices)
  rank = x.shape.rank
  axis = namespace.take_axis(NAME, rank, axis)
  valid = tf.logical_and(indices >= 0, indices < tf.shape(x, out_type=indices.dtype)[axis])
  picked = tf.gather(x, tf.where(valid, indices, tf.zeros_like(indices)), axis=axis)
  mask = tf.reshape(valid, tf.concat(
      [tf.ones([axis], tf.int32), tf.shape(indices), tf.ones([rank - axis - 1], tf.int32)],
      axis=0))
  return tf.where(mask, picked, tf.zeros_like(picked))


def _segment(reduce):
  def segment(data, segment_ids, /, num_segments):
    # TensorFlow documents that rows with a negative id are dropped on every device
    # (ids >= num_segments raise on CPU), so every out-of-range id is made -1.
    ids = tf.convert_to_tensor(segment_ids)
    inside = tf.logical_and(ids >= 0, ids < num_segments)
    return reduce(data, tf.where(inside, ids, -tf.ones_like(ids)), num_segments)
  return segment


xp = Namespace(NAME, tensorflow_array_api, extensions={
    "take": _take,
    "segment_sum": _segment(tf.math.unsorted_segment_sum),
    # Empty segments hold the dtype's largest value, as documented.
    "segment_min": _segment(tf.math.unsorted_segment_min),
    "one_hot": lambda x, num_classes, /, *, dtype: tf.one_hot(x, num_classes, dtype=dtype),
    "unbroadcast": _unbroadcast,
})


def spec_of(x: Any) -> validation.ArraySpec:
  shape = x.shape
  dims = None if shape.rank is None else tuple(shape.as_list())
  return validation.ArraySpec(dims, tf.as_dtype(x.dtype).name)


def _emit(op: OpDef, params: dict) -> Callable[..., Any]:
  @tf.custom_gradient
  def core(*inputs):
    outputs, residuals = validation.check_forward_result(
        op, NAME, op.forward(xp, *inputs, **params))
    single = not isinstance(outputs, (tuple, list))
    if not single:
      outputs = tuple(outputs)
    output_list = validation.as_tuple(outputs)
    input_specs = [spec_of(x) for x in inputs]
    output_specs = [spec_of(o) for o in output_list]
    validation.check_output_dtypes(op, NAME, input_specs, output_specs)

    def grad(*upstream):
      g = validation.cotangent_for(op, output_specs, upstream,
                                   lambda i: tf.zeros_like(output_list[i]), single)
      cotangents = op.backward(xp, residuals, g, **params)
      return list(validation.check_cotangents(op, NAME, input_specs, cotangents, spec_of))

    return outputs, grad

  def call(*inputs):
    validation.check_input_count(op, NAME, inputs)
    # Reading variables here lets the tape route their gradients through `core`.
    tensors = [tf.convert_to_tensor(x) for x in inputs]
    validation.check_inputs(op, NAME, [spec_of(x) for x in tensors], params)
    return core(*tensors)

  return call


get = base.make_get(NAME, _emit)


def devices() -> list[str]:
  """Every logical device TensorFlow sees, as ``type:index`` (CPU first)."""
  found = [d.name.split("device:")[-1].lower() for d in tf.config.list_logical_devices()]
  return sorted(found, key=lambda n: (not n.startswith("cpu"), n))


def evaluate(op: OpDef, params: dict, inputs: Sequence[np.ndarray], cotangent: Sequence[Any],
             *, device: str = "cpu:0", mode: str = "jit"):
  """Outputs (as a tuple) and input cotangents, eagerly, in a graph, or under XLA."""
  base.check_mode(NAME, mode, MODES)
  validation.check_input_count(op, NAME, inputs)
  fn = get(op, **params)

  def run(args, cots):
    with tf.GradientTape() as tape:
      diff_args = [args[i] for i in op.diff_argnums]
      for x in diff_args:
        tape.watch(x)
      outs = validation.as_tuple(fn(*args))
    pairs = [(o, c) for o, c in zip(outs, cots) if c is not None]
    grads = tape.gradient([o for o, _ in pairs], diff_args,
                          output_gradients=[c for _, c in pairs],
                          unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return outs, grads

  if mode != "eager":
    run = base.compiled((fn, mode, device), lambda: tf.function(
        run, jit_compile=(mode == "jit"), autograph=False))
  with tf.device("/device:" + device.upper()):
    args = [tf.constant(x) for x in inputs]
    cots = [None if c is None else tf.constant(c) for c in cotangent]
    outs, grads = run(args, cots)
  return (tuple(o.numpy() for o in outs),
          base.merge_cotangents(op, [g.numpy() for g in grads]))



def precision_scope(arrays: Sequence[Any]):
  """TensorFlow keeps every dtype as it is."""
  del arrays
  return contextlib.nullcontext()


def register_container(cls: type, flatten: Callable, unflatten: Callable) -> None:
  """TensorFlow's nest reads ``__tf_flatten__`` / ``__tf_unflatten__`` from the class."""
  del cls, flatten, unflatten
