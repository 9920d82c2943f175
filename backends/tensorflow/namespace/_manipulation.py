"""Indexing (``take``, ``take_along_axis``) and manipulation functions (``concat``, ``reshape``...)."""

import builtins

import numpy as np
import tensorflow as tf

from crossgrad.backends.tensorflow.namespace._dtypes import (
    _cast, _host_ints, _index, _is_scalar, _norm_axis, _promote, _py_int, _reduce_axes, _shape,
    _tensor, _via_signed, int64)
from crossgrad.backends.tensorflow.namespace._creation import _shape_arg


def _transpose(x, perm):
  """``tf.transpose(x, perm)``, its permutation `_host_ints`."""
  return tf.transpose(x, _host_ints(perm))


# Indexing functions.

def _wrap_indices(indices, n):
  indices = _tensor(indices)
  return tf.where(tf.less(indices, 0), indices + tf.cast(n, indices.dtype), indices)


def take(x, indices, /, *, axis=None):
  x = _tensor(x)
  if axis is None:
    if x.shape.rank != 1:
      raise ValueError("take: axis is required for arrays with more than one dimension")
    axis = 0
  axis = _norm_axis(axis, x.shape.rank)[0]
  return _via_signed(lambda v: tf.gather(v, _wrap_indices(indices, _shape(x)[axis]),
                                         axis=axis), x)


def _last_axis_gather(x, indices):
  """x[..., indices[..., j]] with x and indices of equal batch shapes (along the last axis)."""
  return tf.gather(x, indices, axis=-1, batch_dims=x.shape.rank - 1)


def _move_to_last(x, axis):
  perm = [a for a in range(x.shape.rank) if a != axis] + [axis]
  return _transpose(x, perm), perm


def _from_last(x, perm):
  return _transpose(x, np.argsort(perm).tolist())


def take_along_axis(x, indices, /, *, axis=-1):
  x, indices = _tensor(x), _tensor(indices)
  if indices.shape.rank != x.shape.rank:
    raise ValueError("take_along_axis: x and indices must have the same rank")
  axis = _norm_axis(axis, x.shape.rank)[0]
  xs, js = _shape(x), _shape(indices)
  batch = tf.broadcast_static_shape(
      tf.TensorShape([1 if a == axis else s for a, s in enumerate(xs)]),
      tf.TensorShape([1 if a == axis else s for a, s in enumerate(js)])).as_list()
  x = tf.broadcast_to(x, [xs[a] if a == axis else s for a, s in enumerate(batch)])
  indices = tf.broadcast_to(_wrap_indices(indices, xs[axis]),
                            [js[a] if a == axis else s for a, s in enumerate(batch)])
  xt, perm = _move_to_last(x, axis)
  jt, _ = _move_to_last(indices, axis)
  return _from_last(_last_axis_gather(xt, jt), perm)


# ---------------------------------------------------------------------------------------------
# Manipulation functions.

def _broadcast_shape(*shapes):
  out = tf.TensorShape([])
  for s in shapes:
    out = tf.broadcast_static_shape(out, tf.TensorShape(s))
  return out.as_list()


def broadcast_arrays(*arrays):
  arrays = [_tensor(a) for a in arrays]
  shapes = [_shape(a) for a in arrays]
  if builtins.all(isinstance(d, _py_int) for s in shapes for d in s):
    shape = _broadcast_shape(*shapes)
  else:
    shape = tf.shape(arrays[0])
    for a in arrays[1:]:
      shape = tf.broadcast_dynamic_shape(shape, tf.shape(a))
  shape = _host_ints(shape) if isinstance(shape, list) else shape
  return [tf.broadcast_to(a, shape) for a in arrays]


def broadcast_to(x, /, shape):
  x = _tensor(x)
  shape = _shape_arg(shape)
  _broadcast_shape(_shape(x), shape)  # Raises a ValueError on incompatible shapes.
  if len(shape) < x.shape.rank or builtins.any(
      s != 1 and s != t for s, t in zip(_shape(x)[::-1], shape[::-1])):
    raise ValueError(f"cannot broadcast shape {_shape(x)} to {shape}")
  return tf.broadcast_to(x, _host_ints(shape))


def concat(arrays, /, *, axis=0):
  arrays = _promote(*arrays)
  if axis is None:
    return tf.concat([tf.reshape(a, [-1]) for a in arrays], 0)
  axis = _norm_axis(axis, arrays[0].shape.rank)[0]
  return tf.concat(arrays, axis)


def expand_dims(x, /, axis=0):
  x = _tensor(x)
  axis = _index(axis, "axis")
  if not -x.shape.rank - 1 <= axis <= x.shape.rank:
    raise IndexError(f"expand_dims: axis {axis} is out of range for {x.shape.rank + 1} dims")
  return tf.expand_dims(x, axis)


def flip(x, /, *, axis=None):
  x = _tensor(x)
  axes = _reduce_axes(x, axis)
  return tf.reverse(x, axes) if axes else x


def moveaxis(x, source, destination, /):
  x = _tensor(x)
  src = _norm_axis(source, x.shape.rank)
  dst = _norm_axis(destination, x.shape.rank)
  if len(src) != len(dst):
    raise ValueError("moveaxis: source and destination need the same number of axes")
  order = [a for a in range(x.shape.rank) if a not in src]
  for d, s in sorted(zip(dst, src)):
    order.insert(d, s)
  return _transpose(x, order)


def permute_dims(x, /, axes):
  x = _tensor(x)
  axes = _norm_axis(tuple(axes), x.shape.rank)
  if len(axes) != x.shape.rank:
    raise ValueError(f"permute_dims: axes {axes} do not match {x.shape.rank} dimensions")
  return _transpose(x, axes)


def repeat(x, repeats, /, *, axis=None):
  x = _tensor(x)
  if axis is None:
    x, axis = tf.reshape(x, [-1]), 0
  axis = _norm_axis(axis, x.shape.rank)[0]
  if not _is_scalar(repeats):
    repeats = _cast(repeats, int64)
  return _via_signed(lambda v: tf.repeat(v, repeats, axis=axis), x)


def reshape(x, /, shape, *, copy=None):
  x = _tensor(x)
  shape = _host_ints(_shape_arg(shape))
  return tf.identity(tf.reshape(x, shape)) if copy else tf.reshape(x, shape)


def roll(x, /, shift, *, axis=None):
  x = _tensor(x)
  if axis is None:
    flat = tf.reshape(x, [-1])
    total = builtins.sum(shift) if isinstance(shift, (tuple, list)) else shift
    return tf.reshape(tf.roll(flat, total, 0), _shape(x))
  axes = _norm_axis(axis, x.shape.rank)
  shifts = list(shift) if isinstance(shift, (tuple, list)) else [shift] * len(axes)
  if len(shifts) != len(axes):
    raise ValueError("roll: shift and axis must have the same length")
  return tf.roll(x, shifts, axes) if axes else x


def squeeze(x, /, axis):
  x = _tensor(x)
  axes = _norm_axis(axis, x.shape.rank)
  for a in axes:
    if x.shape[a] is not None and x.shape[a] != 1:
      raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
  return tf.squeeze(x, axes) if axes else x


def stack(arrays, /, *, axis=0):
  arrays = _promote(*arrays)
  axis = _index(axis, "axis")
  rank = arrays[0].shape.rank + 1
  if not -rank <= axis < rank:
    raise IndexError(f"stack: axis {axis} is out of range for {rank} dimensions")
  return tf.stack(arrays, axis)


def tile(x, repetitions, /):
  x = _tensor(x)
  reps = [_index(r, "repetitions") for r in repetitions]
  rank = x.shape.rank
  if len(reps) > rank:
    x = tf.reshape(x, [1] * (len(reps) - rank) + _shape(x))
  reps = [1] * (x.shape.rank - len(reps)) + reps
  return _via_signed(tf.tile, x, reps)


def unstack(x, /, *, axis=0):
  x = _tensor(x)
  axis = _norm_axis(axis, x.shape.rank)[0]
  return tuple(tf.unstack(x, axis=axis))
