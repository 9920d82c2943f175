"""Every handler of crossgrad.tf1.handlers against the TF raw op it translates, on random
inputs (broadcasting, attributes, float32 and float64), in JAX eager and jit. Arrays in a
case are the traced function's inputs (replayed by the handler); lists and numbers are
constants TF folds (axes, shapes, sizes) or attributes."""

import functools

import jax
import numpy as np
import pytest
import tensorflow as tf

from crossgrad.backends import jax as jax_backend
from crossgrad.tf1 import handlers
from crossgrad.tf1 import translate

R = np.random.default_rng(0)


def real(*shape):
  return R.standard_normal(shape)


def positive(*shape):
  return R.uniform(0.5, 2.0, shape)


def unit(*shape):
  return R.uniform(-0.9, 0.9, shape)


def ints(*shape, high=4):
  return R.integers(0, high, shape).astype(np.int32)


def bools(*shape):
  return R.random(shape) < 0.5


X, Y, B = real(3, 4), real(3, 4), real(1, 4)
IMAGE, KERNEL = real(2, 6, 5, 3), real(3, 2, 3, 4)


def _unary(domain=real):
  return [dict(x=domain(3, 4))]


def _binary(domain=real):
  return [dict(x=domain(3, 4), y=domain(3, 4)), dict(x=domain(3, 4), y=domain(1, 4))]


def _reduction(data=X):
  return [dict(input=data, axis=[1], keep_dims=False), dict(input=data, axis=0,
                                                             keep_dims=True)]


def _cumulative():
  return [dict(x=real(3, 4), axis=1, exclusive=e, reverse=r) for e in (False, True)
          for r in (False, True)]


def _conv(padding="SAME", strides=(1, 2, 1, 1), **kw):
  return dict(strides=list(strides), padding=padding, **kw)


def _pool(padding):
  return dict(ksize=[1, 2, 3, 1], strides=[1, 2, 2, 1], padding=padding)


CASES = {
    **{t: [dict(input=X)] for t in ("Identity", "StopGradient", "PreventGradient",
                                     "Snapshot")},
    "IdentityN": [dict(input=[X, Y])],
    "EnsureShape": [dict(input=X, shape=[3, 4])],
    **{t: _unary() for t in (
        "Neg", "Abs", "Sign", "Exp", "Square", "Tanh", "Floor", "Ceil", "Round", "ZerosLike",
        "OnesLike", "Sigmoid", "Sin", "Cos", "Sinh", "Cosh", "Atan", "Asinh", "Expm1",
        "IsFinite", "IsNan", "IsInf", "Rint", "Erf", "Erfc")},
    **{t: [dict(features=real(3, 4) * 4)] for t in ("Relu", "Relu6", "Elu", "Selu",
                                                    "Softplus", "Softsign")},
    **{t: [dict(logits=X)] for t in ("Softmax", "LogSoftmax")},
    "L2Loss": [dict(t=X)],
    **{t: _unary(positive) for t in ("Log", "Sqrt", "Reciprocal", "Inv", "Rsqrt", "Log1p",
                                     "Lgamma", "Digamma")},
    **{t: _unary(unit) for t in ("Asin", "Acos", "Atanh", "Erfinv")},
    "Tan": [dict(x=unit(3, 4))],
    "Acosh": [dict(x=positive(3, 4) + 1.0)],
    "LeakyRelu": [dict(features=X, alpha=0.3)],
    "LogicalNot": [dict(x=bools(3, 4))],
    **{t: [dict(x=bools(3, 4), y=bools(1, 4))] for t in ("LogicalAnd", "LogicalOr")},
    **{t: _binary() for t in (
        "Maximum", "Minimum", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal",
        "NotEqual", "Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "SquaredDifference",
        "DivNoNan", "MulNoNan", "Xdivy", "Atan2", "FloorDiv", "FloorMod")},
    **{t: _binary(positive) for t in ("Pow", "Xlogy", "Xlog1py")},
    **{t: [dict(y=positive(3, 4), dy=X)] for t in (
        "SqrtGrad", "RsqrtGrad", "ReciprocalGrad", "InvGrad", "TanhGrad", "SigmoidGrad")},
    **{t: [dict(gradients=X, features=real(3, 4) * 4)] for t in (
        "ReluGrad", "SoftplusGrad", "SoftsignGrad", "Relu6Grad")},
    "LeakyReluGrad": [dict(gradients=X, features=Y, alpha=0.2)],
    **{t: [dict(gradients=X, outputs=real(3, 4))] for t in ("EluGrad", "SeluGrad")},
    "Polygamma": [dict(a=np.ones((3, 4)), x=positive(3, 4))],
    "ClipByValue": [dict(t=X, clip_value_min=-0.5, clip_value_max=0.4)],
    "Select": [dict(condition=bools(3, 4), x=X, y=Y), dict(condition=bools(3), x=X, y=Y)],
    "SelectV2": [dict(condition=bools(1, 4), t=X, e=B)],
    "Fill": [dict(dims=[2, 3], value=np.array(1.5))],
    "Cast": [dict(x=X, DstT=tf.float32), dict(x=X * 3, DstT=tf.int32)],
    "Reshape": [dict(tensor=X, shape=[2, -1])],
    "ExpandDims": [dict(input=X, axis=-1)],
    "Squeeze": [dict(input=real(3, 1, 4, 1), axis=[1]), dict(input=real(1, 4, 1), axis=[])],
    "Transpose": [dict(x=real(2, 3, 4), perm=[2, 0, 1])],
    "BroadcastTo": [dict(input=B, shape=[2, 3, 4])],
    **{t: _reduction() for t in ("Sum", "Mean", "Max", "Min", "Prod", "EuclideanNorm")},
    **{t: _reduction(bools(3, 4)) for t in ("All", "Any")},
    **{t: [dict(input=X, dimension=1, output_type=tf.int32)] for t in ("ArgMax", "ArgMin")},
    "AddN": [dict(inputs=[X, Y, X])],
    "MatMul": [dict(a=X, b=real(4, 2)), dict(a=X, b=real(2, 4), transpose_b=True),
               dict(a=real(4, 3), b=real(4, 2), transpose_a=True)],
    "ConcatV2": [dict(values=[X, real(2, 4)], axis=0)],
    "Pack": [dict(values=[X, Y], axis=1)],
    "Unpack": [dict(value=X, num=4, axis=1)],
    "UnsortedSegmentSum": [dict(data=X, segment_ids=[0, 2, 0], num_segments=4),
                           dict(data=X, segment_ids=[[0, 1, -1, 3]] * 3, num_segments=4)],
    "GatherV2": [dict(params=X, indices=[2, 0, 2], axis=0), dict(params=X, indices=[[1, 3]],
                                                                 axis=1)],
    **{t: [dict(input=X)] for t in ("Shape", "Size", "Rank")},
    "ShapeN": [dict(input=[X, real(2, 5)])],
    **{t: _cumulative() for t in ("Cumsum", "Cumprod", "CumulativeLogsumexp")},
    "Tile": [dict(input=X, multiples=[2, 1]), dict(input=real(2, 1, 3), multiples=[1, 3, 2])],
    "Slice": [dict(input=X, begin=[1, 0], size=[2, -1])],
    "StridedSlice": [dict(input=X, begin=[0, 1], end=[3, 4], strides=[2, 1]),
                     dict(input=real(3, 4, 2), begin=[1, 0, 0], end=[2, 3, 0], strides=[1, 1, 1],
                          shrink_axis_mask=1, end_mask=4, new_axis_mask=0),
                     dict(input=X, begin=[0, 0, 3], end=[0, 0, 0], strides=[1, 1, -1],
                          begin_mask=1, end_mask=5, new_axis_mask=2)],
    "StridedSliceGrad": [dict(shape=[3, 4], begin=[0, 1], end=[3, 4], strides=[2, 1],
                              dy=real(2, 3)),
                         dict(shape=[3, 4, 2], begin=[1, 0, 0], end=[2, 3, 0],
                              strides=[1, 1, 1], shrink_axis_mask=1, end_mask=4, dy=real(3, 2))],
    "Pad": [dict(input=X, paddings=[[1, 0], [2, 1]])],
    "PadV2": [dict(input=X, paddings=[[0, 2], [1, 1]], constant_values=np.float64(0.5))],
    "MirrorPad": [dict(input=X, paddings=[[1, 1], [2, 0]], mode=m) for m in ("REFLECT",
                                                                           "SYMMETRIC")],
    "MirrorPadGrad": [dict(input=real(5, 6), paddings=[[1, 1], [2, 0]], mode=m)
                      for m in ("REFLECT", "SYMMETRIC")],
    "ReverseV2": [dict(tensor=X, axis=[1]), dict(tensor=X, axis=[0, -1])],
    "Split": [dict(axis=1, value=X, num_split=2)],
    "SplitV": [dict(value=X, size_splits=[1, -1, 2], axis=1, num_split=3)],
    "GatherNd": [dict(params=X, indices=[[0, 1], [2, 3], [0, 1]]), dict(params=X,
                                                                         indices=[[2], [0]])],
    "ScatterNd": [dict(indices=[[0, 1], [2, 3], [0, 1]], updates=real(3), shape=[3, 4]),
                  dict(indices=[[2], [0], [2]], updates=real(3, 4), shape=[4, 4])],
    "BatchMatMul": [dict(x=real(2, 3, 4), y=real(2, 4, 5), adj_y=False)],
    "BatchMatMulV2": [dict(x=real(2, 3, 4), y=real(4, 5)), dict(x=real(2, 4, 3),
                                                               y=real(1, 5, 4), adj_x=True,
                                                               adj_y=True)],
    "BatchMatMulV3": [dict(x=real(2, 3, 4), y=real(2, 4, 5), Tout="the dtype")],
    "Einsum": [dict(inputs=[X, real(2, 4)], equation="ij,kj->ik"),
               dict(inputs=[real(2, 3, 4)], equation="bij->bj")],
    "MatrixDiagV3": [dict(diagonal=real(2, 3), k=0, num_rows=-1, num_cols=-1,
                          padding_value=np.float64(0.0))],
    "MatrixDiagPartV3": [dict(input=real(2, 3, 3), k=0, padding_value=np.float64(0.0))],
    "MatrixInverse": [dict(input=real(2, 3, 3) + 4 * np.eye(3))],
    "TopKV2": [dict(input=X, k=2)],
    "SoftmaxCrossEntropyWithLogits": [dict(features=X, labels=positive(3, 4))],
    "SparseSoftmaxCrossEntropyWithLogits": [dict(features=X, labels=ints(3))],
    "BiasAdd": [dict(value=X, bias=real(4)), dict(value=real(2, 3, 4, 5), bias=real(3),
                                                  data_format="NCHW")],
    "BiasAddV1": [dict(value=X, bias=real(4))],
    "BiasAddGrad": [dict(out_backprop=real(2, 3, 4)), dict(out_backprop=real(2, 3, 4, 5),
                                                           data_format="NCHW")],
    "Conv2D": [dict(input=IMAGE, filter=KERNEL, **_conv()),
               dict(input=IMAGE, filter=KERNEL, **_conv("VALID", dilations=[1, 1, 2, 1])),
               dict(input=IMAGE, filter=KERNEL, **_conv(
                   "EXPLICIT", explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0]))],
    "Conv2DBackpropInput": [dict(input_sizes=[2, 6, 5, 3], filter=KERNEL,
                                 out_backprop=real(2, 3, 5, 4), **_conv())],
    "Conv2DBackpropFilter": [dict(input=IMAGE, filter_sizes=[3, 2, 3, 4],
                                  out_backprop=real(2, 3, 5, 4), **_conv())],
    "DepthwiseConv2dNative": [dict(input=IMAGE, filter=real(3, 2, 3, 2), **_conv(
        strides=[1, 2, 2, 1]))],
    "DepthwiseConv2dNativeBackpropInput": [dict(input_sizes=[2, 6, 5, 3],
                                                filter=real(3, 2, 3, 2),
                                                out_backprop=real(2, 3, 3, 6),
                                                **_conv(strides=[1, 2, 2, 1]))],
    "DepthwiseConv2dNativeBackpropFilter": [dict(input=IMAGE, filter_sizes=[3, 2, 3, 2],
                                                 out_backprop=real(2, 3, 3, 6),
                                                 **_conv(strides=[1, 2, 2, 1]))],
    "MaxPool": [dict(input=IMAGE, **_pool(p)) for p in ("VALID", "SAME")],
    "AvgPool": [dict(value=IMAGE, **_pool(p)) for p in ("VALID", "SAME")],
    "MaxPoolGrad": [dict(orig_input=IMAGE, orig_output=None, grad=real(2, 3, 2, 3),
                         **_pool("VALID"))],
    "MaxPoolV2": [dict(input=IMAGE, ksize=[1, 2, 3, 1], strides=[1, 2, 2, 1], padding="SAME")],
    **{t: [dict(data=X, segment_ids=[0, 0, 2])] for t in (
        "SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd")},
    **{t: [dict(data=X, segment_ids=[3, 0, 3], num_segments=5)] for t in (
        "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd")},
    **{t: [dict(tensor=X, indices=[[0, 1], [2, 3]], updates=real(2)),
           dict(tensor=X, indices=[[2], [0]], updates=real(2, 4))] for t in (
               "TensorScatterAdd", "TensorScatterSub", "TensorScatterUpdate",
               "TensorScatterMax", "TensorScatterMin")},
    "Ndtri": [dict(x=R.uniform(0.05, 0.95, (3, 4)))],
    **{t: [dict(a=positive(3, 4), x=positive(3, 4))] for t in ("Igamma", "Igammac")},
    "Zeta": [dict(x=positive(3, 4) + 1.5, q=positive(3, 4))],
    **{t: _unary() for t in ("BesselI0e", "BesselI1e", "BesselI0", "BesselI1")},
    "Cross": [dict(a=real(2, 3), b=real(2, 3))],
    "Diag": [dict(diagonal=real(2, 3))],
    "DiagPart": [dict(input=real(2, 3, 2, 3))],
    "Gather": [dict(params=X, indices=[2, 0, 2])],
    "Concat": [dict(concat_dim=1, values=[X, real(3, 2)])],
    "TruncateDiv": [dict(x=real(3, 4) * 5, y=positive(3, 4))],
    "MatrixBandPart": [dict(input=real(2, 4, 5), num_lower=1, num_upper=-1),
                       dict(input=real(4, 3), num_lower=0, num_upper=1)],
    "MatrixSetDiagV3": [dict(input=real(2, 3, 4), diagonal=real(2, 3), k=0)],
    "SpaceToDepth": [dict(input=real(2, 4, 6, 3), block_size=2)],
    "DepthToSpace": [dict(input=real(2, 2, 3, 8), block_size=2)],
    "AvgPoolGrad": [dict(orig_input_shape=[2, 6, 5, 3], grad=real(2, 3, 3, 3),
                         **_pool("SAME"))],
}


def test_every_handler_has_cases():
  assert set(CASES) == set(handlers.HANDLERS)


def _complete(op_type, kwargs):
  """MaxPoolGrad needs the forward's output: TF's own MaxPool of the input."""
  if op_type == "MaxPoolGrad":
    kwargs = dict(kwargs, orig_output=tf.raw_ops.MaxPool(
        input=kwargs["orig_input"], **{k: kwargs[k] for k in ("ksize", "strides", "padding")}))
  return kwargs


def _split(kwargs, dtype):
  """The arrays (as inputs, floats cast to ``dtype``) and a builder of the raw op's keywords."""
  arrays, slots = [], {}
  for key, value in kwargs.items():
    values = value if isinstance(value, list) and value and isinstance(
        value[0], np.ndarray) else [value]
    if isinstance(values[0], np.ndarray):
      slots[key] = (len(arrays), len(values), isinstance(value, list))
      arrays += [v.astype(dtype) if v.dtype.kind == "f" else v for v in values]

  def build(*xs):
    out = dict(kwargs)
    for key, (start, n, listed) in slots.items():
      out[key] = list(xs[start:start + n]) if listed else xs[start]
    return out

  return arrays, build


@functools.cache
def _prepared(op_type, dtype):
  """Per case of ``op_type`` in ``dtype``: its keywords, its arrays, the raw op's outputs
  and the translated program (made once: the test and `jitted` share them)."""
  raw = getattr(tf.raw_ops, op_type)
  prepared = []
  for kwargs in CASES[op_type]:
    kwargs = {k: (np.asarray(v).astype(dtype) if isinstance(v, np.floating) else v)
              for k, v in _complete(op_type, kwargs).items()}
    kwargs = {k: (tf.constant(v.numpy().astype(dtype)) if isinstance(v, tf.Tensor) else
                  tf.as_dtype(dtype) if isinstance(v, str) and v == "the dtype" else v)
              for k, v in kwargs.items()}
    arrays, build = _split(kwargs, dtype)
    want = raw(**build(*[tf.constant(a) for a in arrays]))
    want = [w.numpy() for w in (want if isinstance(want, (list, tuple)) else [want])]
    program = translate.Program(lambda *xs: raw(**build(*xs)),
                                [tf.TensorSpec(a.shape, a.dtype) for a in arrays])
    prepared.append((kwargs, arrays, want, program))
  return prepared


def _jit_one_by_one(op_type, dtype):
  with jax.enable_x64(dtype == "float64"):
    return [jax.jit(lambda *xs, p=program: p(jax_backend.xp, *xs))(*arrays)
            for _, arrays, _, program in _prepared(op_type, dtype)]


def _jit_all_at_once(dtype):
  """``{op_type: outputs per case}`` of every case in ``dtype`` from one `jax.jit` of all
  the programs (one XLA compilation, not one per case); None if that fails."""
  try:
    programs = [(op_type, program, len(arrays)) for op_type in sorted(CASES)
                for _, arrays, _, program in _prepared(op_type, dtype)]
    flat = [a for op_type in sorted(CASES) for _, arrays, _, _ in _prepared(op_type, dtype)
            for a in arrays]

    def every_case(*xs):
      outs, start = [], 0
      for _, program, n in programs:
        outs.append(program(jax_backend.xp, *xs[start:start + n]))
        start += n
      return outs

    with jax.enable_x64(dtype == "float64"):
      outs = jax.jit(every_case)(*flat)
  except Exception:  # pylint: disable=broad-except  # Each case's own jit shows the error.
    return None
  found = {}
  for (op_type, _, _), out in zip(programs, outs):
    found.setdefault(op_type, []).append(out)
  return found


@pytest.fixture(scope="module")
def jitted():
  """``jitted(op_type, dtype)``: each case's translated program under `jax.jit`, outputs
  per case. Every case of a dtype compiles as one jitted function; should that fail, each
  compiles alone, so a failure lands on its own test."""
  every = {}

  def outputs(op_type, dtype):
    if dtype not in every:
      every[dtype] = _jit_all_at_once(dtype)
    if every[dtype] is None:
      return _jit_one_by_one(op_type, dtype)
    return every[dtype][op_type]
  return outputs


@pytest.mark.parametrize("op_type", sorted(CASES))
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_handler_matches_the_raw_op(op_type, dtype, jitted):
  for _, _, _, program in _prepared(op_type, dtype):
    assert not program.missing, program.missing
    replayed = [op.type for op in program._ops  # pylint: disable=protected-access
                if op.outputs[0].ref() not in program._static]  # pylint: disable=protected-access
    assert op_type in replayed or op_type in handlers.SHAPE_OPS, replayed  # Not folded.
  compiled = jitted(op_type, dtype)
  assert len(compiled) == len(CASES[op_type])
  for (kwargs, arrays, want, program), by_jit in zip(_prepared(op_type, dtype), compiled):
    with jax.enable_x64(dtype == "float64"):
      eager = program(jax_backend.xp, *arrays)
    for got in (eager, by_jit):
      assert len(got) == len(want)
      for a, b in zip(got, want):
        assert np.asarray(a).dtype == b.dtype, (op_type, kwargs)
        tol = 1e-5 if dtype == "float32" or op_type in ("Digamma", "Polygamma") else 1e-12
        np.testing.assert_allclose(np.asarray(a), b, rtol=tol, atol=tol, err_msg=op_type)
