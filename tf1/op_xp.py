"""TF op types as ``xp`` expressions: one source of their meaning for the TF1 twin and the porter.

`TEMPLATES` maps a TF op type to an ``xp`` expression over its tensor inputs and
attributes, as positional fields (``"xp.exp({0})"``). `crossgrad.tf1.handlers` compiles
them into its `HANDLERS` (the JAX twin replays TF graphs with them) and
`crossgrad.port.tables.tensorflow` fills them with the argument names of the TF2 calls
that create each op type (``tf.math.exp(x)`` -> ``xp.exp(x)``), so both read TF's ops the
same way. No framework is imported here.
"""

from __future__ import annotations

import string
from typing import Any, Callable

# Op type -> the xp function of the same meaning (one array in, one out).
UNARY = {
    "Neg": "negative", "Abs": "abs", "Sign": "sign", "Exp": "exp", "Log": "log",
    "Sqrt": "sqrt", "Square": "square", "Tanh": "tanh", "Floor": "floor", "Ceil": "ceil",
    "Round": "round", "LogicalNot": "logical_not", "ZerosLike": "zeros_like",
    "OnesLike": "ones_like", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Sinh": "sinh",
    "Cosh": "cosh", "Asin": "asin", "Acos": "acos", "Atan": "atan", "Asinh": "asinh",
    "Acosh": "acosh", "Atanh": "atanh", "Expm1": "expm1", "Log1p": "log1p",
    "IsFinite": "isfinite", "IsNan": "isnan", "IsInf": "isinf", "Rint": "round",
    "Erf": "erf",
}
# Op type -> the xp function of two arrays.
BINARY = {
    "Maximum": "maximum", "Minimum": "minimum", "Less": "less", "LessEqual": "less_equal",
    "Greater": "greater", "GreaterEqual": "greater_equal", "Equal": "equal",
    "LogicalAnd": "logical_and", "LogicalOr": "logical_or",
}
# Op type -> the Python operator between its two inputs.
OPERATORS = {"Add": "+", "AddV2": "+", "Sub": "-", "Mul": "*", "RealDiv": "/", "Div": "/",
             "Pow": "**"}
# Op type -> the xp reduction; fields: input, axis, keepdims.
REDUCTIONS = {"Sum": "sum", "Mean": "mean", "Max": "max", "Min": "min", "Prod": "prod",
              "All": "all", "Any": "any"}

TEMPLATES: dict[str, str] = {
    **{t: f"xp.{n}({{0}})" for t, n in UNARY.items()},
    **{t: f"xp.{n}({{0}}, {{1}})" for t, n in BINARY.items()},
    **{t: f"({{0}} {o} {{1}})" for t, o in OPERATORS.items()},
    **{t: f"xp.{n}({{0}}, axis={{1}}, keepdims={{2}})" for t, n in REDUCTIONS.items()},
    "NotEqual": "xp.logical_not(xp.equal({0}, {1}))",
    "SquaredDifference": "xp.square({0} - {1})",
    "Relu": "xp.maximum({0}, xp.zeros_like({0}))",
    "Sigmoid": "(xp.ones_like({0}) / (1 + xp.exp(-{0})))",
    "Reciprocal": "(xp.ones_like({0}) / {0})",
    "Inv": "(xp.ones_like({0}) / {0})",
    "Rsqrt": "(xp.ones_like({0}) / xp.sqrt({0}))",
    "ClipByValue": "xp.minimum(xp.maximum({0}, {1}), {2})",
    "ExpandDims": "xp.expand_dims({0}, axis={1})",
    # Gradient kernels: (y or features, upstream) as TF orders them.
    "ReluGrad": "xp.where({1} > 0, {0}, xp.zeros_like({0}))",
    "SigmoidGrad": "({1} * {0} * (1 - {0}))",
    "TanhGrad": "({1} * (1 - {0} * {0}))",
}


def expression(op_type: str, *args: str) -> str:
  """The xp source of ``op_type`` applied to the argument sources ``args``."""
  return TEMPLATES[op_type].format(*args)


def arity(op_type: str) -> int:
  """How many values (inputs and attributes) the template of ``op_type`` takes."""
  return 1 + max(int(field) for _, field, _, _ in string.Formatter().parse(
      TEMPLATES[op_type]) if field is not None)


def function(op_type: str) -> Callable[..., Any]:
  """``f(xp, *values)``: the template of ``op_type`` as a Python function."""
  names = [f"a{i}" for i in range(arity(op_type))]
  return eval(f"lambda xp, {', '.join(names)}: {expression(op_type, *names)}")  # pylint: disable=eval-used
