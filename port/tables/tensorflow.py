"""`TABLE`: TensorFlow calls (``tf``, ``tf.math``, ``tf.nn``, Tensor attributes) as ``xp``.

One with the TF1 twin: a TF2 call that creates one TF op type is listed in `OP_TYPES`
(``"tensorflow.math.exp": "Exp"``) and translated by that op type's template in
`crossgrad.tf1.op_xp`, the same text `crossgrad.tf1.handlers` compiles into the JAX twin's
`HANDLERS`; tests/test_port_tables.py checks that TF builds that op type for the call and
that the entry computes what TF does. Calls whose TF2 arguments do not map one to one onto
an op's inputs (shapes as tensors, matmul's transposes, softmax's axis) are entries of
their own below.
"""

from __future__ import annotations

from crossgrad.port.translate import (EINSUM_EXAMPLES, EXTENSION, HOST_READ, PYTHON, RANDOM,
                                      STOP_GRADIENT, VIEW, Arg, Entry, Refused, Table, einsum,
                                      entry, gelu, refusal)
from crossgrad.tf1 import op_xp

TF = "tensorflow"

# TF2 call (without the "tensorflow." prefix) -> the op type it creates.
OP_TYPES: dict[str, str] = {
    **{n: t for t, names in {
        "Exp": ("exp", "math.exp"), "Log": ("math.log",), "Log1p": ("math.log1p",),
        "Expm1": ("math.expm1",), "Sqrt": ("sqrt", "math.sqrt"),
        "Square": ("square", "math.square"), "Tanh": ("tanh", "math.tanh", "nn.tanh"),
        "Sin": ("sin", "math.sin"), "Cos": ("cos", "math.cos"), "Tan": ("math.tan",),
        "Sinh": ("math.sinh",), "Cosh": ("math.cosh",), "Atan": ("math.atan",),
        "Asinh": ("math.asinh",), "Abs": ("abs", "math.abs"), "Sign": ("sign", "math.sign"),
        "Floor": ("floor", "math.floor"), "Ceil": ("math.ceil",),
        "Round": ("round", "math.round"), "Rint": ("math.rint",),
        "Neg": ("negative", "math.negative"), "IsFinite": ("math.is_finite",),
        "IsNan": ("math.is_nan",), "IsInf": ("math.is_inf",),
        "Sigmoid": ("sigmoid", "math.sigmoid", "nn.sigmoid"),
        "Reciprocal": ("math.reciprocal",), "Rsqrt": ("math.rsqrt",),
        "LogicalNot": ("logical_not", "math.logical_not"), "Erf": ("math.erf",),
    }.items() for n in names},
    "nn.relu": "Relu",
    **{n: t for t, names in {
        "Maximum": ("maximum", "math.maximum"), "Minimum": ("minimum", "math.minimum"),
        "Less": ("less", "math.less"), "LessEqual": ("less_equal", "math.less_equal"),
        "Greater": ("greater", "math.greater"),
        "GreaterEqual": ("greater_equal", "math.greater_equal"),
        "Equal": ("equal", "math.equal"), "NotEqual": ("not_equal", "math.not_equal"),
        "LogicalAnd": ("logical_and", "math.logical_and"),
        "LogicalOr": ("logical_or", "math.logical_or"),
        "AddV2": ("add", "math.add"), "Sub": ("subtract", "math.subtract"),
        "Mul": ("multiply", "math.multiply"),
        "RealDiv": ("divide", "math.divide", "math.truediv", "realdiv"),
        "Pow": ("pow", "math.pow"), "SquaredDifference": ("math.squared_difference",),
    }.items() for n in names},
    **{f"{m}reduce_{r}": t for t, r in {
        "Sum": "sum", "Mean": "mean", "Max": "max", "Min": "min", "Prod": "prod",
        "All": "all", "Any": "any"}.items() for m in ("", "math.")},
    "expand_dims": "ExpandDims",
}
# Example arguments by the op type's arity and kind.
_POSITIVE = {"Log", "Log1p", "Sqrt", "Rsqrt", "Reciprocal", "Pow"}
_BOOLEAN = {"LogicalNot", "LogicalAnd", "LogicalOr", "All", "Any"}


def _op_entry(op_type: str) -> Entry:
  """The entry for a call creating ``op_type``, from its `op_xp` template."""
  if op_type in op_xp.REDUCTIONS:
    data = "m" if op_type in _BOOLEAN else "x"
    return entry("input_tensor, axis=None, keepdims=False, name=None",
                 op_xp.expression(op_type, "{input_tensor}", "{axis}", "{keepdims}"),
                 examples=(data, f"{data}, 1", f"{data}, axis=[0, 1], keepdims=True"))
  if op_type == "ExpandDims":
    return entry("input, axis, name=None", op_xp.expression(op_type, "{input}", "{axis}"),
                 returns=VIEW, examples=("x, 0", "x, -1"))
  data = "m" if op_type in _BOOLEAN else "p" if op_type in _POSITIVE else "x"
  if op_xp.arity(op_type) == 1:
    name = "features" if op_type == "Relu" else "x"
    return entry(f"{name}, name=None", op_xp.expression(op_type, f"{{{name}}}"),
                 examples=(data,))
  other = "m" if data == "m" else "q" if data == "p" else "y"
  return entry("x, y, name=None", op_xp.expression(op_type, "{x}", "{y}"),
               examples=(f"{data}, {other}", f"{data}, 2.0" if data != "m" else "m, m"))


def _matmul(a: Arg, b: Arg, transpose_a: Arg, transpose_b: Arg, adjoint_a: Arg,
            adjoint_b: Arg, a_is_sparse: Arg, b_is_sparse: Arg, output_type: Arg,
            grad_a: Arg = None, grad_b: Arg = None, name: Arg = None) -> str:
  def side(x: Arg, transpose: Arg, adjoint: Arg) -> str:
    flags = {transpose.src, adjoint.src} - {"False", ""}
    if flags - {"True"}:
      raise Refused("matmul with a computed transpose flag has no translation")
    return f"xp.matrix_transpose({x})" if flags else str(x)
  return f"xp.matmul({side(a, transpose_a, adjoint_a)}, {side(b, transpose_b, adjoint_b)})"


def _where(condition: Arg, x: Arg, y: Arg, name: Arg) -> str:
  if x.is_none or y.is_none:
    raise Refused("where(condition) alone returns indices (a value-dependent shape)")
  return f"xp.where({condition}, {x}, {y})"


def _axis(axis: Arg) -> str:
  return "-1" if axis.is_none else str(axis)


def _softmax(log: bool):
  def render(logits: Arg, axis: Arg, name: Arg) -> str:
    shifted = f"({logits} - xp.max({logits}, axis={_axis(axis)}, keepdims=True))"
    total = f"xp.sum(xp.exp({shifted}), axis={_axis(axis)}, keepdims=True)"
    return f"({shifted} - xp.log({total}))" if log else f"(xp.exp({shifted}) / {total})"
  return entry("logits, axis=None, name=None", render, examples=("x", "x, 0", "x, axis=1"))


def _logsumexp(input_tensor: Arg, axis: Arg, keepdims: Arg, name: Arg) -> str:
  x = input_tensor
  peak = f"xp.max({x}, axis={axis}, keepdims=True)"
  safe = f"xp.where(xp.isfinite({peak}), {peak}, xp.zeros_like({peak}))"
  total = f"(xp.log(xp.sum(xp.exp({x} - {safe}), axis={axis}, keepdims=True)) + {safe})"
  squeezed = (f"xp.reshape({total}, ())" if axis.is_none
              else f"xp.squeeze({total}, axis={axis})")
  return f"({total} if {keepdims} else {squeezed})"


def _like(fill: str):
  def render(input: Arg, dtype: Arg, name: Arg) -> str:  # pylint: disable=redefined-builtin
    return f"xp.{fill}({input})" if dtype.is_none else f"xp.{fill}({input}, dtype={dtype})"
  return entry("input, dtype=None, name=None", render, examples=("x", "x, tensorflow.float64"))


def _creation(fill: str):
  return entry("shape, dtype=None, name=None, layout=None",
               lambda shape, dtype, name, layout: f"xp.{fill}(tuple({shape}), dtype="
               f"{'xp.float32' if dtype.is_none else dtype})",
               examples=("(2, 3)", "[4], tensorflow.float64"))


def _transpose(a: Arg, perm: Arg, conjugate: Arg, name: Arg) -> str:
  if perm.is_none:
    return f"xp.permute_dims({a}, tuple(range({a}.ndim))[::-1])"
  return f"xp.permute_dims({a}, tuple({perm}))"


def _squeeze(input: Arg, axis: Arg, name: Arg) -> str:  # pylint: disable=redefined-builtin
  if axis.is_none:
    return f"xp.squeeze({input}, axis=tuple(k for k, n in enumerate({input}.shape) if n == 1))"
  return f"xp.squeeze({input}, axis={axis})"


def _cumsum(x: Arg, axis: Arg, exclusive: Arg, reverse: Arg, name: Arg) -> str:
  if {exclusive.src, reverse.src} - {"False", ""}:
    raise Refused("cumsum with exclusive= or reverse= has no translation")
  return f"xp.cumulative_sum({x}, axis={axis})"


def _one_hot(indices: Arg, depth: Arg, on_value: Arg, off_value: Arg, axis: Arg,
             dtype: Arg, name: Arg) -> str:
  if not (on_value.is_none and off_value.is_none and axis.is_none):
    raise Refused("one_hot with on_value, off_value or axis has no translation")
  return f"xp.one_hot({indices}, {depth}, dtype={'xp.float32' if dtype.is_none else dtype})"



_CLIP = op_xp.expression("Maximum", op_xp.expression("Minimum", "{t}", "{clip_value_max}"),
                         "{clip_value_min}")  # TF's clip_by_value: Minimum, then Maximum.

OWN: dict[str, Entry] = {
    "nn.gelu": entry("features, approximate=False, name=None",
                     lambda features, approximate, name: gelu(
                         features, approximate, tanh=("True",), exact=("False", "")),
                     examples=("x", "x, approximate=True")),
    "identity": entry("input, name=None", "{input}", returns=VIEW, examples=("x",)),
    "clip_by_value": entry("t, clip_value_min, clip_value_max, name=None", _CLIP,
                           examples=("x, -0.5, 0.5", "x, y, 1.0")),
    "cast": entry("x, dtype, name=None", lambda x, dtype, name: f"xp.astype({x}, {dtype})"
                  if x.is_array else f"xp.asarray({x}, dtype={dtype})",
                  examples=("i, tensorflow.float32", "x, tensorflow.float64",
                            "2.5, x.dtype")),
    "shape": entry("input, out_type=None, name=None", "{input}.shape", returns=PYTHON,
                   examples=("x",)),
    "rank": entry("input, name=None", "{input}.ndim", returns=PYTHON, examples=("x",)),
    "reshape": entry("tensor, shape, name=None", "xp.reshape({tensor}, tuple({shape}))",
                     returns=VIEW, examples=("x, [2, 6]", "x, (-1,)")),
    "transpose": entry("a, perm=None, conjugate=False, name=None", _transpose, returns=VIEW,
                       examples=("x", "b, [1, 0, 2]")),
    "squeeze": entry("input, axis=None, name=None", _squeeze, returns=VIEW,
                     examples=("s", "s, 1", "s, axis=[-1]")),
    "broadcast_to": entry("input, shape, name=None", "xp.broadcast_to({input}, tuple({shape}))",
                          returns=VIEW, examples=("v, [3, 4]",)),
    "where": entry("condition, x=None, y=None, name=None", _where,
                   examples=("m, x, y", "m, x, 0.0")),
    "concat": entry("values, axis, name='concat'", "xp.concat({values}, axis={axis})",
                    examples=("[x, y], 0", "(x, y), axis=1")),
    "stack": entry("values, axis=0, name='stack'", "xp.stack({values}, axis={axis})",
                   examples=("[x, y]", "[x, y], 1")),
    "zeros_like": _like("zeros_like"), "ones_like": _like("ones_like"),
    "zeros": _creation("zeros"), "ones": _creation("ones"),
    "fill": entry("dims, value, name=None", "xp.full(tuple({dims}), {value})",
                  examples=("[2, 3], 1.5",)),
    "matmul": entry("a, b, transpose_a=False, transpose_b=False, adjoint_a=False, "
                    "adjoint_b=False, a_is_sparse=False, b_is_sparse=False, "
                    "output_type=None, grad_a=False, grad_b=False, name=None", _matmul,
                    examples=("x, w", "x, x, transpose_b=True", "w, x, True, True")),
    "math.atan2": entry("y, x, name=None", "xp.atan2({y}, {x})", examples=("x, y",)),
    "math.floordiv": entry("x, y, name=None", "xp.floor_divide({x}, {y})",
                           examples=("x, p",)),
    "math.floormod": entry("x, y, name=None", "xp.remainder({x}, {y})", examples=("x, p",)),
    "math.divide_no_nan": entry("x, y, name=None",
                                "xp.where({y} == 0, xp.zeros_like({x} * {y}), {x} / "
                                "xp.where({y} == 0, xp.ones_like({y}), {y}))",
                                examples=("x, y", "x, 0.0 * y")),
    "math.softplus": entry("features, name=None",
                           "xp.logaddexp({features}, xp.zeros_like({features}))",
                           examples=("x * 5",)),
    "math.log_sigmoid": entry("x, name=None", "(-xp.logaddexp(xp.zeros_like({x}), -{x}))",
                              examples=("x",)),
    "math.reduce_logsumexp": entry("input_tensor, axis=None, keepdims=False, name=None",
                                   _logsumexp, examples=("x, 1", "x", "x, 0, True")),
    "math.reduce_euclidean_norm": entry(
        "input_tensor, axis=None, keepdims=False, name=None",
        "xp.linalg.vector_norm({input_tensor}, axis={axis}, keepdims={keepdims})",
        examples=("x", "x, 1")),
    "math.cumsum": entry("x, axis=0, exclusive=False, reverse=False, name=None", _cumsum,
                         examples=("x", "x, 1")),
    "nn.softplus": entry("features, name=None",
                         "xp.logaddexp({features}, xp.zeros_like({features}))",
                         examples=("x * 5",)),
    "nn.softsign": entry("features, name=None", "({features} / (1 + xp.abs({features})))",
                         examples=("x",)),
    "nn.relu6": entry("features, name=None", "xp.clip({features}, min=0.0, max=6.0)",
                      examples=("x * 4",)),
    "nn.elu": entry("features, name=None",
                    "xp.where({features} > 0, {features}, xp.expm1({features}))",
                    examples=("x",)),
    "nn.leaky_relu": entry("features, alpha=0.2, name=None",
                           "xp.where({features} > 0, {features}, {alpha} * {features})",
                           examples=("x", "x, 0.1")),
    "nn.silu": entry("features, beta=1.0",
                     "({features} / (1 + xp.exp(-{beta} * {features})))",
                     examples=("x", "x, 2.0")),
    "nn.softmax": _softmax(log=False), "nn.log_softmax": _softmax(log=True),
    "nn.l2_loss": entry("t, name=None", "(xp.sum({t} * {t}) / 2)", examples=("x",)),
    "one_hot": entry("indices, depth, on_value=None, off_value=None, axis=None, "
                     "dtype=None, name=None", _one_hot, examples=("i, 3",)),
    "stop_gradient": refusal(STOP_GRADIENT),
    "gather": refusal("tf.gather raises on out-of-range indices on CPU (zeros on GPU): "
                      "write it with xp.take, whose rule is zeros everywhere"),
    "einsum": entry("equation, *inputs, name=None", lambda equation, inputs, name: einsum(equation, inputs),
                    examples=EINSUM_EXAMPLES),
}
OWN["nn.swish"] = OWN["nn.silu"]
OWN["linalg.matmul"] = OWN["matmul"]

METHODS: dict[str, Entry] = {
    "shape": entry("a", "{a}.shape", returns=PYTHON, attribute=True, examples=("x",)),
    "dtype": entry("a", "{a}.dtype", returns=PYTHON, attribute=True, examples=("x", "i")),
    "ndim": entry("a", "{a}.ndim", returns=PYTHON, attribute=True, examples=("x",)),
    "get_shape": entry("a", "{a}.shape", returns=PYTHON, examples=("x",)),
    "numpy": refusal(HOST_READ),
}

_DTYPES = ("float16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool",
           "complex64", "complex128")
_AUTODIFF = "autodiff inside the definition: the op language differentiates nothing itself"

TABLE = Table(
    framework="tensorflow",
    roots=(TF,),
    entries={
        **{f"{TF}.{k}": _op_entry(t) for k, t in OP_TYPES.items()},
        **{f"{TF}.{k}": v for k, v in OWN.items()},
        **{f"Tensor.{k}": v for k, v in METHODS.items()},
    },
    constants={**{f"{TF}.{d}": f"xp.{d}" for d in _DTYPES},
               **{f"{TF}.dtypes.{d}": f"xp.{d}" for d in _DTYPES},
               f"{TF}.float": "xp.float32"},
    refused={f"{TF}.random.": RANDOM, f"{TF}.nn.dropout": RANDOM,
             f"{TF}.numpy_function": EXTENSION, f"{TF}.py_function": EXTENSION,
             f"{TF}.compat.v1.py_func": EXTENSION, f"{TF}.load_op_library": EXTENSION,
             f"{TF}.raw_ops.": "a raw op (its semantics are TF's kernel's, not Python here)",
             f"{TF}.GradientTape": _AUTODIFF, f"{TF}.gradients": _AUTODIFF,
             f"{TF}.custom_gradient": _AUTODIFF,
             f"{TF}.Variable": "a tf.Variable inside the definition (state the op cannot "
                               "carry: pass its value as an input)",
             f"{TF}.print": "printing inside the definition (a side effect)",
             f"{TF}.debugging.": "a runtime check on values (the op language has none)",
             f"{TF}.cond": "control flow on array values (write it with xp.where)",
             f"{TF}.while_loop": "control flow on array values (write it with xp.where)"},
)
