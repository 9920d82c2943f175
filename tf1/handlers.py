"""`HANDLERS`: each TF op type a translated function may apply to its inputs, as JAX code.

``HANDLERS[op_type](ns, op, *inputs)`` is the op on the arrays of ``ns`` (the JAX ``xp``
namespace), with its attributes read from ``op``; inputs that do not depend on the
function's inputs (axes, shapes, permutations) arrive folded, as NumPy arrays. Where the
Array API has the op, a handler writes it with ``ns``; the rest (cumulative sums, slices
with strides, scatters, top-k, convolutions, pooling and their gradients) use `jax.numpy`
and `jax.lax`. The list is what TF's registered gradients of math, array and nn ops emit
(``python -m crossgrad.tf1.coverage`` shows what ordinary gradients still miss);
tests/test_tf1_handlers.py checks each handler against the TF raw op.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import jax
from jax import lax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np

from crossgrad.tf1 import op_xp


def _fn(ns, *names):
  """The first of ``names`` the namespace has (Array API name first, the older one next)."""
  return getattr(ns, next(n for n in names if n in dir(ns)))


def _axes(value) -> tuple[int, ...]:
  return tuple(int(a) for a in np.atleast_1d(value))


def _reduction(op_type):
  fn = op_xp.function(op_type)
  return lambda ns, op, x, axes: fn(ns, x, _axes(axes), op.get_attr("keep_dims"))


def _elementwise(op_type):
  """The op type's `op_xp` template, on its tensor inputs (the porter's TF table reads the
  same templates)."""
  fn = op_xp.function(op_type)
  return lambda ns, op, *xs: fn(ns, *xs)


def _binary(fn):
  return lambda ns, op, a, b: fn(ns, a, b)


_EXPAND_DIMS = op_xp.function("ExpandDims")


def _unsorted_segment_sum(ns, op, data, ids, n):
  """TF's ids may shape any leading axes of data; xp.segment_sum takes one id per row."""
  if len(ids.shape) != 1:  # Flattened: one id per row (1-D ids need no reshapes).
    data = ns.reshape(data, (-1, *data.shape[len(ids.shape):]))
    ids = ns.reshape(ids, (-1,))
  return ns.segment_sum(data, ids, int(n))


def _select(ns, op, cond, a, b):
  if op.type == "Select" and np.ndim(cond) == 1 and np.ndim(a) > 1:  # TF1's row select.
    cond = ns.reshape(cond, (-1,) + (1,) * (np.ndim(a) - 1))
  return ns.where(cond, a, b)


def _squeeze(ns, op, x):
  axes = [a % np.ndim(x) for a in op.get_attr("squeeze_dims")] or [
      i for i, d in enumerate(np.shape(x)) if d == 1]
  return ns.reshape(x, tuple(d for i, d in enumerate(np.shape(x)) if i not in axes))


def _matmul(ns, op, a, b):
  swap = _fn(ns, "matrix_transpose", "transpose")
  a = swap(a) if op.get_attr("transpose_a") else a
  b = swap(b) if op.get_attr("transpose_b") else b
  return ns.matmul(a, b)


def _concat(ns, op, *values):
  *arrays, axis = values
  return _fn(ns, "concat", "concatenate")(list(arrays), axis=int(axis))


def _pack(ns, op, *values):
  axis = op.get_attr("axis") % (np.ndim(values[0]) + 1)
  return _fn(ns, "concat", "concatenate")([ns.expand_dims(v, axis) for v in values], axis=axis)


def _shape_of(kind):
  def shape(ns, op, x):
    dtype = op.outputs[0].dtype.as_numpy_dtype
    value = {"Shape": np.shape(x), "Size": np.size(x), "Rank": np.ndim(x)}[kind]
    return np.asarray(value, dtype)
  return shape


HANDLERS: dict[str, Callable[..., Any]] = {
    **{t: lambda ns, op, *xs: list(xs) if op.type == "IdentityN" else xs[0] for t in (
        "Identity", "IdentityN", "StopGradient", "PreventGradient", "Snapshot",
        "EnsureShape")},
    **{t: _elementwise(t) for t in op_xp.TEMPLATES if t not in op_xp.REDUCTIONS
       and t != "ExpandDims"},
    "Select": _select, "SelectV2": _select,
    "Fill": lambda ns, op, dims, value: ns.broadcast_to(value, tuple(int(d) for d in dims)),
    "Cast": lambda ns, op, x: ns.astype(x, np.dtype(op.get_attr("DstT").as_numpy_dtype)),
    "Reshape": lambda ns, op, x, shape: ns.reshape(x, tuple(int(d) for d in shape)),
    "ExpandDims": lambda ns, op, x, axis: _EXPAND_DIMS(ns, x, int(axis)),
    "Squeeze": _squeeze,
    "Transpose": lambda ns, op, x, perm: _fn(ns, "permute_dims", "transpose")(
        x, tuple(int(p) for p in perm)),
    "BroadcastTo": lambda ns, op, x, shape: ns.broadcast_to(x, tuple(int(d) for d in shape)),
    **{t: _reduction(t) for t in op_xp.REDUCTIONS},
    "AddN": lambda ns, op, *xs: sum(xs[1:], xs[0]),
    "MatMul": _matmul, "ConcatV2": _concat, "Pack": _pack,
    "UnsortedSegmentSum": _unsorted_segment_sum,
    "GatherV2": lambda ns, op, x, ids, axis: ns.take(x, ids, axis=int(axis)),
    "Shape": _shape_of("Shape"), "Size": _shape_of("Size"), "Rank": _shape_of("Rank"),
}


# TF's gradient library and the ops users write around it, as JAX code.


def _ints(value) -> tuple[int, ...]:
  """Folded axes, shapes or sizes as Python ints (a traced value cannot be: `TypeError`)."""
  return tuple(int(v) for v in np.asarray(value).reshape(-1))


def _attr(name: str) -> Callable[[Any], Any]:
  return lambda op: op.get_attr(name)


def _no_nan(fn, zero_where):
  """``fn(x, y)``, and exactly 0 where ``zero_where(x, y)`` (TF's *NoNan, Xlogy, Xdivy)."""
  def handler(ns, op, x, y):
    zero = zero_where(x, y)
    return jnp.where(zero, jnp.zeros_like(x * y), fn(x, jnp.where(zero, jnp.ones_like(y), y)))
  return handler


def _cumulative(fn, identity):
  def handler(ns, op, x, axis):
    axis = int(axis) % x.ndim
    reverse, exclusive = op.get_attr("reverse"), op.get_attr("exclusive")
    x = jnp.flip(x, axis) if reverse else x
    y = fn(x, axis=axis)
    if exclusive:
      first = jnp.full_like(lax.slice_in_dim(y, 0, 1, axis=axis), identity)
      y = jnp.concatenate([first, lax.slice_in_dim(y, 0, x.shape[axis] - 1, axis=axis)], axis)
    return jnp.flip(y, axis) if reverse else y
  return handler


def _strided_index(op) -> Callable[..., tuple]:
  """The NumPy index a StridedSlice(Grad) op's folded begin, end, strides and masks mean."""
  masks = {n: op.get_attr(f"{n}_mask") for n in ("begin", "end", "ellipsis", "new_axis",
                                                 "shrink_axis")}

  def index(begin, end, strides):
    parts = []
    for i, (b, e, s) in enumerate(zip(_ints(begin), _ints(end), _ints(strides))):
      bit = 1 << i
      parts.append(Ellipsis if masks["ellipsis"] & bit else None if masks["new_axis"] & bit
                   else b if masks["shrink_axis"] & bit else
                   slice(None if masks["begin"] & bit else b, None if masks["end"] & bit
                         else e, s))
    return tuple(parts)
  return index


def _slice(ns, op, x, begin, size):
  begin = _ints(begin)
  end = [b + (s if s >= 0 else d - b) for b, s, d in zip(begin, _ints(size), x.shape)]
  return lax.slice(x, begin, end)


def _split_v(ns, op, x, sizes, axis):
  axis, sizes = int(axis) % x.ndim, list(_ints(sizes))
  if -1 in sizes:
    sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
  return list(jnp.split(x, np.cumsum(sizes)[:-1], axis=axis))


def _pads(paddings) -> list[tuple[int, int]]:
  flat = _ints(paddings)
  return list(zip(flat[::2], flat[1::2]))


def _mirror_pad(ns, op, x, paddings):
  return jnp.pad(x, _pads(paddings), mode=op.get_attr("mode").decode().lower())


def _mirror_pad_grad(ns, op, g, paddings):
  pads = _pads(paddings)
  shape = [d - a - b for d, (a, b) in zip(g.shape, pads)]
  mode = op.get_attr("mode").decode().lower()
  return jax.vjp(lambda z: jnp.pad(z, pads, mode=mode), jnp.zeros(shape, g.dtype))[1](g)[0]


def _gather_nd(ns, op, params, indices):
  indices = jnp.asarray(indices)
  return params[tuple(indices[..., k] for k in range(indices.shape[-1]))]


def _scatter_nd(ns, op, indices, updates, shape):
  indices = jnp.asarray(indices)
  zeros = jnp.zeros(_ints(shape), updates.dtype)
  return zeros.at[tuple(indices[..., k] for k in range(indices.shape[-1]))].add(updates)


def _batch_matmul(ns, op, x, y):
  x = jnp.swapaxes(x, -1, -2) if op.get_attr("adj_x") else x
  y = jnp.swapaxes(y, -1, -2) if op.get_attr("adj_y") else y
  return jnp.matmul(x, y).astype(op.outputs[0].dtype.as_numpy_dtype)


def _diag_k0(op, k):
  if _ints(k) != (0,):
    raise NotImplementedError(f"{op.type} with k={_ints(k)} (only the main diagonal)")


def _matrix_diag(ns, op, diagonal, k, rows, cols, padding):
  _diag_k0(op, k)
  n = diagonal.shape[-1]
  if {int(rows), int(cols)} - {-1, n}:
    raise NotImplementedError("MatrixDiagV3 with a non-square result")
  eye = jnp.eye(n, dtype=bool)
  return jnp.where(eye, diagonal[..., :, None], jnp.asarray(padding, diagonal.dtype))


def _matrix_diag_part(ns, op, x, k, padding):
  _diag_k0(op, k)
  return jnp.diagonal(x, axis1=-2, axis2=-1)


def _top_k(ns, op, x, k):
  values, indices = lax.top_k(x, int(k))
  return [values, indices.astype(op.outputs[1].dtype.as_numpy_dtype)]


def _cross_entropy(ns, op, logits, labels):
  labels = jnp.broadcast_to(labels, logits.shape)
  return [-jnp.sum(labels * jax.nn.log_softmax(logits), -1), jax.nn.softmax(logits) - labels]


def _sparse_cross_entropy(ns, op, logits, labels):
  one_hot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
  return _cross_entropy(ns, op, logits, one_hot)


def _channels_last(op) -> bool:
  """NHWC (TF's default; BiasAddV1 has no data_format), not NCHW."""
  return "data_format" not in op.node_def.attr or not op.get_attr(
      "data_format").decode().startswith("NC")


def _bias_add(ns, op, value, bias):
  shape = (-1,) if _channels_last(op) else (-1,) + (1,) * (value.ndim - 2)
  return value + jnp.reshape(bias, shape)


def _bias_add_grad(ns, op, g):
  channel = g.ndim - 1 if _channels_last(op) else 1
  return jnp.sum(g, axis=tuple(a for a in range(g.ndim) if a != channel))


def _window(op, name):
  """An attribute (strides, ksize, dilations) for the spatial dimensions."""
  values = list(op.get_attr(name))
  return values[1:-1] if _channels_last(op) else values[2:]


def _padding(op):
  padding = op.get_attr("padding").decode()
  if padding != "EXPLICIT":
    return padding
  flat = list(op.get_attr("explicit_paddings"))
  pairs = list(zip(flat[::2], flat[1::2]))
  return pairs[1:-1] if _channels_last(op) else pairs[2:]


def _conv(op, depthwise=False):
  """``conv(x, w)`` with ``op``'s attributes (TF's HWIO filters; depthwise: HW C M)."""
  layout = "NHWC" if _channels_last(op) else "NCHW"

  def conv(x, w):
    groups = 1
    if depthwise:
      groups = w.shape[2]
      w = jnp.reshape(w, w.shape[:2] + (1, w.shape[2] * w.shape[3]))
    return lax.conv_general_dilated(
        x, w, _window(op, "strides"), _padding(op),
        rhs_dilation=_window(op, "dilations"),
        dimension_numbers=(layout, "HWIO", layout), feature_group_count=groups)
  return conv


def _conv_handlers(depthwise: bool) -> dict[str, Callable[..., Any]]:
  def forward(ns, op, x, w):
    return _conv(op, depthwise)(x, w)

  def input_grad(ns, op, sizes, w, g):
    zeros = jnp.zeros(_ints(sizes), g.dtype)
    return jax.vjp(lambda x: _conv(op, depthwise)(x, w), zeros)[1](g)[0]

  def filter_grad(ns, op, x, sizes, g):
    zeros = jnp.zeros(_ints(sizes), g.dtype)
    return jax.vjp(lambda w: _conv(op, depthwise)(x, w), zeros)[1](g)[0]

  name = "DepthwiseConv2dNative" if depthwise else "Conv2D"
  return {name: forward, f"{name}BackpropInput": input_grad,
          f"{name}BackpropFilter": filter_grad}


def _pool(op, kind, ksize=None, strides=None):
  """The pooling ``op`` does, with its attributes (MaxPoolV2: ``ksize``, ``strides`` given)."""
  def pool(x):
    window = list(op.get_attr("ksize") if ksize is None else _ints(ksize))
    step = list(op.get_attr("strides") if strides is None else _ints(strides))
    padding = op.get_attr("padding").decode()
    if kind == "max":
      return lax.reduce_window(x, -jnp.inf, lax.max, window, step, padding)
    total = lax.reduce_window(x, 0.0, lax.add, window, step, padding)
    count = lax.reduce_window(jnp.ones_like(x), 0.0, lax.add, window, step, padding)
    return total / count
  return pool


def _max_pool_grad(ns, op, x, y, g):
  return jax.vjp(_pool(op, "max"), x)[1](g)[0]


def _avg_pool_grad(ns, op, shape, g):
  return jax.vjp(_pool(op, "avg"), jnp.zeros(_ints(shape), g.dtype))[1](g)[0]


_SELU_SCALE, _SELU_ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717


def _unpack(ns, op, x):
  return [lax.index_in_dim(x, i, op.get_attr("axis") % x.ndim, keepdims=False)
          for i in range(op.get_attr("num"))]


def _where_zero(ns, op, g, condition):
  return jnp.where(condition, g, jnp.zeros_like(g))


def _segments(kind, sorted_ids):
  """Segment reductions; empty segments hold TF's value (0 for sum and mean, 1 for prod;
  max / min: sorted 0, unsorted the dtype's lowest / highest)."""
  reduce = {"sum": jax.ops.segment_sum, "max": jax.ops.segment_max,
            "min": jax.ops.segment_min, "prod": jax.ops.segment_prod}

  def handler(ns, op, data, ids, *num):
    n = int(num[0]) if num else max(_ints(ids)) + 1
    ids = jnp.asarray(ids)
    count = jax.ops.segment_sum(jnp.ones(ids.shape, data.dtype), ids, n)
    count = jnp.reshape(count, (n,) + (1,) * (data.ndim - ids.ndim))
    out = reduce["sum" if kind == "mean" else kind](data, ids, n)
    if kind == "mean":
      return out / jnp.maximum(count, 1)
    info = jnp.finfo if jnp.issubdtype(data.dtype, jnp.floating) else jnp.iinfo
    empty = 1 if kind == "prod" else 0 if sorted_ids or kind == "sum" else {
        "max": info(data.dtype).min, "min": info(data.dtype).max}[kind]
    return jnp.where(count > 0, out, jnp.asarray(empty, data.dtype))
  return handler


def _tensor_scatter(method):
  def handler(ns, op, tensor, indices, updates):
    indices = jnp.asarray(indices)
    at = jnp.asarray(tensor).at[tuple(indices[..., k] for k in range(indices.shape[-1]))]
    return getattr(at, method)(-updates if method == "add" and op.type.endswith("Sub")
                               else updates)
  return handler


def _band_part(ns, op, x, lower, upper):
  rows = jnp.arange(x.shape[-2])[:, None]
  cols = jnp.arange(x.shape[-1])[None, :]
  lower, upper = int(lower), int(upper)
  keep = ((lower < 0) | (rows - cols <= lower)) & ((upper < 0) | (cols - rows <= upper))
  return jnp.where(keep, x, jnp.zeros_like(x))


def _set_diag(ns, op, x, diagonal, k):
  _diag_k0(op, k)
  r = jnp.arange(min(x.shape[-2:]))
  return jnp.asarray(x).at[..., r, r].set(diagonal)


def _diag_part(ns, op, x):
  half = x.shape[:x.ndim // 2]
  n = int(np.prod(half))
  return jnp.reshape(jnp.diagonal(jnp.reshape(x, (n, n))), half)


def _space_depth(to_depth):
  def handler(ns, op, x):
    if not _channels_last(op):
      raise NotImplementedError(f"{op.type} with data_format NCHW")
    b = op.get_attr("block_size")
    n, h, w, c = x.shape
    if to_depth:
      x = jnp.reshape(x, (n, h // b, b, w // b, b, c)).transpose(0, 1, 3, 2, 4, 5)
      return jnp.reshape(x, (n, h // b, w // b, b * b * c))
    x = jnp.reshape(x, (n, h, w, b, b, c // (b * b))).transpose(0, 1, 3, 2, 4, 5)
    return jnp.reshape(x, (n, h * b, w * b, c // (b * b)))
  return handler


def _truncate_div(ns, op, a, b):
  return lax.div(a, b) if jnp.issubdtype(a.dtype, jnp.integer) else jnp.trunc(a / b)


HANDLERS.update({
    **{t: lambda ns, op, x, f=f: f(x) for t, f in {
        "Erf": jsp.erf, "Erfinv": jsp.erfinv, "Erfc": jsp.erfc, "Lgamma": jsp.gammaln, "Digamma": jsp.digamma,
        "Softplus": jax.nn.softplus, "Softsign": jax.nn.soft_sign,
        "Relu6": lambda x: jnp.clip(x, 0, 6), "Elu": lambda x: jnp.where(x > 0, x, jnp.expm1(x)),
        "Selu": lambda x: _SELU_SCALE * jnp.where(x > 0, x, _SELU_ALPHA * jnp.expm1(x)),
        "Softmax": jax.nn.softmax, "LogSoftmax": jax.nn.log_softmax,
        "L2Loss": lambda x: jnp.sum(x * x) / 2,
        "MatrixInverse": jnp.linalg.inv}.items()},
    "Polygamma": lambda ns, op, n, x: jsp.polygamma(jnp.asarray(n).astype(int), x),
    "ShapeN": lambda ns, op, *xs: [np.asarray(np.shape(x), op.get_attr("out_type")
                                              .as_numpy_dtype) for x in xs],
    "LeakyRelu": lambda ns, op, x: jnp.where(x > 0, x, op.get_attr("alpha") * x),
    # Gradient kernels: (y or features, upstream) as TF orders them.
    "SqrtGrad": lambda ns, op, y, dy: dy * 0.5 / y,
    "RsqrtGrad": lambda ns, op, y, dy: dy * -0.5 * y * y * y,
    "ReciprocalGrad": lambda ns, op, y, dy: -dy * y * y,
    "InvGrad": lambda ns, op, y, dy: -dy * y * y,
    "SoftplusGrad": lambda ns, op, g, f: g * jax.nn.sigmoid(f),
    "SoftsignGrad": lambda ns, op, g, f: g / jnp.square(1 + jnp.abs(f)),
    "EluGrad": lambda ns, op, g, y: jnp.where(y > 0, g, g * (y + 1)),
    "SeluGrad": lambda ns, op, g, y: jnp.where(y > 0, g * _SELU_SCALE,
                                               g * (y + _SELU_SCALE * _SELU_ALPHA)),
    "Relu6Grad": lambda ns, op, g, f: _where_zero(ns, op, g, (f > 0) & (f < 6)),
    "LeakyReluGrad": lambda ns, op, g, f: jnp.where(f > 0, g, op.get_attr("alpha") * g),
    "DivNoNan": _no_nan(operator.truediv, lambda x, y: y == 0),
    "MulNoNan": _no_nan(operator.mul, lambda x, y: y == 0),
    "Xdivy": _no_nan(operator.truediv, lambda x, y: x == 0),
    "Xlogy": _no_nan(lambda x, y: x * jnp.log(y), lambda x, y: x == 0),
    "Xlog1py": _no_nan(lambda x, y: x * jnp.log1p(y), lambda x, y: x == 0),
    "Atan2": _binary(lambda ns, y, x: jnp.arctan2(y, x)),
    "FloorDiv": _binary(lambda ns, a, b: jnp.floor_divide(a, b)),
    "FloorMod": _binary(lambda ns, a, b: jnp.mod(a, b)),
    "EuclideanNorm": lambda ns, op, x, axes: jnp.sqrt(jnp.sum(
        x * x, axis=_axes(axes), keepdims=op.get_attr("keep_dims"))),
    "ArgMax": lambda ns, op, x, axis: jnp.argmax(x, int(axis)).astype(
        op.get_attr("output_type").as_numpy_dtype),
    "ArgMin": lambda ns, op, x, axis: jnp.argmin(x, int(axis)).astype(
        op.get_attr("output_type").as_numpy_dtype),
    "Cumsum": _cumulative(jnp.cumsum, 0), "Cumprod": _cumulative(jnp.cumprod, 1),
    "CumulativeLogsumexp": _cumulative(lambda x, axis: lax.cumlogsumexp(x, axis), -np.inf),
    "Tile": lambda ns, op, x, multiples: jnp.tile(x, _ints(multiples)),
    "Slice": _slice,
    "StridedSlice": lambda ns, op, x, b, e, s: x[_strided_index(op)(b, e, s)],
    "StridedSliceGrad": lambda ns, op, shape, b, e, s, dy: jnp.zeros(
        _ints(shape), dy.dtype).at[_strided_index(op)(b, e, s)].set(dy),
    "Pad": lambda ns, op, x, paddings: jnp.pad(x, _pads(paddings)),
    "PadV2": lambda ns, op, x, paddings, value: jnp.pad(x, _pads(paddings),
                                                        constant_values=value),
    "MirrorPad": _mirror_pad, "MirrorPadGrad": _mirror_pad_grad,
    "ReverseV2": lambda ns, op, x, axis: jnp.flip(x, _ints(axis)),
    "Split": lambda ns, op, axis, x: list(jnp.split(x, op.get_attr("num_split"),
                                                    axis=int(axis))),
    "SplitV": _split_v, "Unpack": _unpack,
    "GatherNd": _gather_nd, "ScatterNd": _scatter_nd,
    "BatchMatMul": _batch_matmul, "BatchMatMulV2": _batch_matmul,
    "BatchMatMulV3": _batch_matmul,
    "Einsum": lambda ns, op, *xs: jnp.einsum(op.get_attr("equation").decode(), *xs),
    "MatrixDiagV3": _matrix_diag, "MatrixDiagPartV3": _matrix_diag_part,
    "TopKV2": _top_k,
    "SoftmaxCrossEntropyWithLogits": _cross_entropy,
    "SparseSoftmaxCrossEntropyWithLogits": _sparse_cross_entropy,
    "BiasAdd": _bias_add, "BiasAddV1": _bias_add, "BiasAddGrad": _bias_add_grad,
    **_conv_handlers(depthwise=False), **_conv_handlers(depthwise=True),
    "MaxPool": lambda ns, op, x: _pool(op, "max")(x), "MaxPoolGrad": _max_pool_grad,
    "MaxPoolV2": lambda ns, op, x, ksize, strides: _pool(op, "max", ksize, strides)(x),
    **{t: _segments(k, sorted_ids=True) for t, k in {
        "SegmentSum": "sum", "SegmentMean": "mean", "SegmentMax": "max", "SegmentMin": "min",
        "SegmentProd": "prod"}.items()},
    **{t: _segments(k, sorted_ids=False) for t, k in {
        "UnsortedSegmentMax": "max", "UnsortedSegmentMin": "min",
        "UnsortedSegmentProd": "prod"}.items()},
    **{t: _tensor_scatter(m) for t, m in {
        "TensorScatterAdd": "add", "TensorScatterSub": "add", "TensorScatterUpdate": "set",
        "TensorScatterMax": "max", "TensorScatterMin": "min"}.items()},
    **{t: lambda ns, op, *xs, f=f: f(*xs) for t, f in {
        "Ndtri": jsp.ndtri, "Igamma": jsp.gammainc, "Igammac": jsp.gammaincc,
        "Zeta": jsp.zeta, "BesselI0e": jsp.i0e, "BesselI1e": jsp.i1e, "BesselI0": jsp.i0,
        "BesselI1": jsp.i1, "Cross": jnp.cross, "Diag": lambda x: jnp.reshape(
            jnp.diagflat(x), x.shape + x.shape)}.items()},
    "Gather": lambda ns, op, params, indices: jnp.take(params, jnp.asarray(indices), axis=0),
    "Concat": lambda ns, op, axis, *values: jnp.concatenate(values, axis=int(axis)),
    "TruncateDiv": _truncate_div, "DiagPart": _diag_part,
    "MatrixBandPart": _band_part, "MatrixSetDiagV3": _set_diag,
    "SpaceToDepth": _space_depth(to_depth=True), "DepthToSpace": _space_depth(to_depth=False),
    "AvgPool": lambda ns, op, x: _pool(op, "avg")(x), "AvgPoolGrad": _avg_pool_grad,
})
# Ops whose output depends only on the input's static shape, never on its values.
SHAPE_OPS = ("Shape", "ShapeN", "Size", "Rank")
