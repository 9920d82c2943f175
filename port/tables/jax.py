"""`TABLE`: JAX calls (``jax.numpy``, ``jax.lax``, ``jax.nn``, array methods) as ``xp``.

Entries follow JAX's signatures and defaults (``jnp.zeros`` without a dtype is float32,
as JAX runs without x64; ``jax.nn.gelu`` is the tanh form by default; ``lax.clamp`` takes
the bounds around the operand). Calls whose meaning the op language cannot carry
(randomness, host callbacks, ``lax`` control flow, autodiff inside a definition,
``stop_gradient``) are refused with the reason.
"""

from __future__ import annotations

from crossgrad.port.translate import (EINSUM_EXAMPLES, EXTENSION, HOST_READ, PYTHON, RANDOM,
                                      STOP_GRADIENT, VALUE_FLOW, VIEW, Arg, Entry, Refused,
                                      Table, einsum, entry, gelu, refusal)

NP, LAX, NN = "jax.numpy", "jax.lax", "jax.nn"

_DTYPES = {"float32": "float32", "float64": "float64", "float16": "float16",
           "int32": "int32", "int64": "int64", "int8": "int8", "uint8": "uint8",
           "bool_": "bool", "bool": "bool", "complex64": "complex64"}
_POSITIVE = ("log", "sqrt", "log1p", "log2", "log10", "reciprocal")


def _unary(xp_name: str, spec: str = "x, /") -> Entry:
  arg = spec.split(",")[0]
  example = "p" if xp_name in _POSITIVE else "m" if xp_name == "logical_not" else "x"
  return entry(spec, f"xp.{xp_name}({{{arg}}})", examples=(example,))


def _binary(template: str, spec: str = "x, y, /", examples=("x, y", "x, 2.0")) -> Entry:
  return entry(spec, template, examples=examples)


def _function2(xp_name: str, examples) -> Entry:
  """An xp function of two arrays; a Python number becomes an array of the other's
  dtype (not every backend's xp takes scalars there)."""
  def render(x: Arg, y: Arg) -> str:
    if not x.is_array and y.is_array:
      x = Arg(f"xp.asarray({x}, dtype={y}.dtype)")
    elif not y.is_array and x.is_array:
      y = Arg(f"xp.asarray({y}, dtype={x}.dtype)")
    return f"xp.{xp_name}({x}, {y})"
  return entry("x, y, /", render, examples=examples)


def _reduction(xp_name: str, examples=("x", "x, 1", "x, axis=0, keepdims=True",
                                        "x, (0, 1)")) -> Entry:
  def render(a: Arg, axis: Arg, dtype: Arg, out: Arg, keepdims: Arg) -> str:
    if not out.is_none:
      raise Refused("out= writes into an array")
    kind = "" if dtype.is_none or xp_name not in ("sum", "prod") else f", dtype={dtype}"
    return f"xp.{xp_name}({a}, axis={axis}, keepdims={keepdims}{kind})"
  return entry("a, axis=None, dtype=None, out=None, keepdims=False", render,
               examples=examples)


def _extreme(xp_name: str) -> Entry:
  def render(a: Arg, axis: Arg, out: Arg, keepdims: Arg) -> str:
    if not out.is_none:
      raise Refused("out= writes into an array")
    return f"xp.{xp_name}({a}, axis={axis}, keepdims={keepdims})"
  return entry("a, axis=None, out=None, keepdims=False", render,
               examples=("x", "x, 1", "x, axis=0, keepdims=True"))


def _arg_extreme(xp_name: str) -> Entry:
  return entry("a, axis=None, out=None, keepdims=None",
               lambda a, axis, out, keepdims: f"xp.{xp_name}({a}, axis={axis}, keepdims="
               f"{'False' if keepdims.is_none else keepdims})", examples=("x, 1", "x"))


def _logsumexp(a: Arg, axis: Arg, b: Arg = None, keepdims: Arg = None,
               return_sign: Arg = None, where: Arg = None) -> str:
  if (b is not None and not b.is_none) or (return_sign is not None and
                                           return_sign.src not in ("False", "")):
    raise Refused("logsumexp with b= or return_sign= has no translation")
  if where is not None and not where.is_none:
    raise Refused("logsumexp with where= has no translation")
  keep = "False" if keepdims is None else keepdims
  peak = f"xp.max({a}, axis={axis}, keepdims=True)"
  safe = f"xp.where(xp.isfinite({peak}), {peak}, xp.zeros_like({peak}))"
  total = f"xp.log(xp.sum(xp.exp({a} - {safe}), axis={axis}, keepdims=True)) + {safe}"
  return f"(({total}) if {keep} else xp.squeeze({total}, axis={axis}))" if axis.src not in (
      "None", "") else f"(({total}) if {keep} else xp.reshape({total}, ()))"


def _softmax(log: bool):
  def render(x: Arg, axis: Arg, where: Arg, initial: Arg = None) -> str:
    if not where.is_none:
      raise Refused("softmax with where= has no translation")
    shifted = f"({x} - xp.max({x}, axis={axis}, keepdims=True))"
    if log:
      return (f"({shifted} - xp.log(xp.sum(xp.exp({shifted}), axis={axis}, "
              "keepdims=True)))")
    return f"(xp.exp({shifted}) / xp.sum(xp.exp({shifted}), axis={axis}, keepdims=True))"
  return entry("x, axis=-1, where=None", render, examples=("x", "x, axis=0", "x, 1"))


def _like(fill: str, extra: str = ""):
  def render(a: Arg, fill_value: Arg = None, dtype: Arg = None, shape: Arg = None,
             device: Arg = None) -> str:
    if shape is not None and not shape.is_none:
      raise Refused(f"{fill}(shape=...) has no translation")
    value = f", {fill_value}" if fill_value is not None else ""
    kind = f", dtype={dtype}" if not dtype.is_none else ""
    return f"xp.{fill}({a}{value}{kind})"
  return entry(f"a, {extra}dtype=None, shape=None, *, device=None", render,
               examples=("x, 0.5",) if extra else ("x", "x, jax.numpy.float32"))


def _creation(fill: str):
  return entry("shape, dtype=None, *, device=None",
               lambda shape, dtype, device: f"xp.{fill}({shape}, dtype="
               f"{'xp.float32' if dtype.is_none else dtype})",
               examples=("(2, 3)", "4", "(2, 3), jax.numpy.float32"))


def _transpose(a: Arg, axes: Arg) -> str:
  if axes.is_none:
    return f"xp.permute_dims({a}, tuple(range({a}.ndim))[::-1])"
  return f"xp.permute_dims({a}, {axes})"


def _swapaxes(a: Arg, axis1: Arg, axis2: Arg) -> str:
  n = f"{a}.ndim"
  return (f"xp.permute_dims({a}, tuple({axis2} % {n} if k == {axis1} % {n} else {axis1} % "
          f"{n} if k == {axis2} % {n} else k for k in range({n})))")


def _dot(a: Arg, b: Arg, precision: Arg = None, preferred_element_type: Arg = None) -> str:
  """NumPy's dot: the last axis of a against the second-to-last of b (b's only axis)."""
  return (f"xp.tensordot({a}, {b}, axes=(({a}.ndim - 1,), (max({b}.ndim - 2, 0),)))")


def _where(condition: Arg, x: Arg, y: Arg) -> str:
  if x.is_none or y.is_none:
    raise Refused("where(condition) alone returns indices (a value-dependent shape)")
  return f"xp.where({condition}, {x}, {y})"


def _cumulative(xp_name: str):
  def render(a: Arg, axis: Arg, dtype: Arg) -> str:
    if axis.is_none:
      return f"xp.{xp_name}(xp.reshape({a}, (-1,)), axis=0)"
    return f"xp.{xp_name}({a}, axis={axis})"
  return entry("a, axis=None, dtype=None", render, examples=("x, 1", "x", "p, axis=0"))


def _norm(x: Arg, ord: Arg, axis: Arg, keepdims: Arg) -> str:  # pylint: disable=redefined-builtin
  if not ord.is_none and ord.src not in ("2", "2.0"):
    raise Refused(f"norm with ord={ord} has no translation (only the 2-norm)")
  return f"xp.linalg.vector_norm({x}, axis={axis}, keepdims={keepdims})"


def _one_hot(x: Arg, num_classes: Arg, dtype: Arg, axis: Arg) -> str:
  if axis.src not in ("-1", ""):
    raise Refused("one_hot with an axis other than -1 has no translation")
  kind = "xp.float32" if dtype.is_none else dtype
  return f"xp.one_hot({x}, {num_classes}, dtype={kind})"



_UNARY = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "log2": "log2",
          "log10": "log10", "tanh": "tanh", "sin": "sin", "cos": "cos", "tan": "tan",
          "sinh": "sinh", "cosh": "cosh", "arctan": "atan", "abs": "abs",
          "absolute": "abs", "sign": "sign", "sqrt": "sqrt", "square": "square",
          "floor": "floor", "ceil": "ceil", "trunc": "trunc", "negative": "negative",
          "reciprocal": "reciprocal", "isnan": "isnan", "isinf": "isinf",
          "isfinite": "isfinite", "signbit": "signbit", "logical_not": "logical_not"}
_BINARY = {"maximum": "maximum", "minimum": "minimum", "arctan2": "atan2",
           "logaddexp": "logaddexp", "hypot": "hypot", "copysign": "copysign",
           "logical_and": "logical_and", "logical_or": "logical_or"}
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/",
              "true_divide": "/", "greater": ">", "less": "<", "greater_equal": ">=",
              "less_equal": "<=", "equal": "==", "not_equal": "!="}

NUMPY: dict[str, Entry] = {
    **{k: _unary(v) for k, v in _UNARY.items()},
    **{k: _function2(v, ("m, m",) if v.startswith("logical") else ("x, y", "x, 0.5",
                                                                     "0.5, y", "2.0 * x, 0.5"))
       for k, v in _BINARY.items()},
    **{k: _binary(f"({{x}} {v} {{y}})") for k, v in _OPERATORS.items()},
    "power": _binary("({x} ** {y})", examples=("p, q", "p, 2")),
    "round": entry("a, decimals=0, out=None",
                   lambda a, decimals, out: f"xp.round({a})" if decimals.src in ("0", "")
                   else _raise("round with decimals has no translation"), examples=("x",)),
    "clip": entry("x, /, min=None, max=None", "xp.clip({x}, min={min}, max={max})",
                  examples=("x, -0.5, 0.5", "x, min=0.0", "x, max=y")),
    "where": entry("condition, x=None, y=None, /", _where,
                   examples=("m, x, y", "m, x, 0.0")),
    "sum": _reduction("sum"), "mean": _reduction("mean"), "prod": _reduction("prod"),
    "max": _extreme("max"), "min": _extreme("min"), "amax": _extreme("max"),
    "amin": _extreme("min"), "argmax": _arg_extreme("argmax"),
    "argmin": _arg_extreme("argmin"),
    "all": _extreme("all"), "any": _extreme("any"),
    "var": entry("a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
                 "xp.var({a}, axis={axis}, correction={ddof}, keepdims={keepdims})",
                 examples=("x, 1", "x, ddof=1")),
    "std": entry("a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
                 "xp.std({a}, axis={axis}, correction={ddof}, keepdims={keepdims})",
                 examples=("x, 0", "x")),
    "cumsum": _cumulative("cumulative_sum"), "cumprod": _cumulative("cumulative_prod"),
    "zeros_like": _like("zeros_like"), "ones_like": _like("ones_like"),
    "full_like": _like("full_like", extra="fill_value, "),
    "zeros": _creation("zeros"), "ones": _creation("ones"),
    "asarray": entry("a, dtype=None", lambda a, dtype: f"xp.asarray({a}, dtype={dtype})",
                     examples=("x", "1.5")),
    "astype": entry("x, dtype, /", "xp.astype({x}, {dtype})",
                    examples=("x, jax.numpy.float32", "i, jax.numpy.float32")),
    "reshape": entry("a, shape", "xp.reshape({a}, {shape})", returns=VIEW,
                     examples=("x, (2, 6)", "x, (-1,)")),
    "expand_dims": entry("a, axis", "xp.expand_dims({a}, axis={axis})", returns=VIEW,
                         examples=("x, 0", "x, -1")),
    "squeeze": entry("a, axis=None", lambda a, axis: f"xp.squeeze({a}, axis="
                     f"{axis if not axis.is_none else f'tuple(k for k, n in enumerate({a}.shape) if n == 1)'})",
                     returns=VIEW, examples=("s", "s, 1", "s, axis=-1")),
    "broadcast_to": entry("array, shape", "xp.broadcast_to({array}, {shape})",
                          returns=VIEW, examples=("v, (3, 4)", "s, x.shape")),
    "transpose": entry("a, axes=None", _transpose, returns=VIEW,
                       examples=("x", "b, (1, 0, 2)")),
    "swapaxes": entry("a, axis1, axis2", _swapaxes, returns=VIEW,
                      examples=("x, 0, 1", "b, -1, 0")),
    "moveaxis": entry("a, source, destination",
                      "xp.moveaxis({a}, {source}, {destination})", returns=VIEW,
                      examples=("b, 0, -1",)),
    "concatenate": entry("arrays, axis=0", "xp.concat({arrays}, axis={axis})",
                         examples=("(x, y)", "[x, y], 1")),
    "concat": entry("arrays, /, *, axis=0", "xp.concat({arrays}, axis={axis})",
                    examples=("(x, y), axis=1",)),
    "stack": entry("arrays, axis=0", "xp.stack({arrays}, axis={axis})",
                   examples=("(x, y)", "[x, y], 1")),
    "flip": entry("m, axis=None", "xp.flip({m}, axis={axis})", examples=("x, 0", "x")),
    "roll": entry("a, shift, axis=None", "xp.roll({a}, shift={shift}, axis={axis})",
                  examples=("x, 1, 0", "x, 2")),
    "tril": entry("m, k=0", "xp.tril({m}, k={k})", examples=("x", "x, 1")),
    "triu": entry("m, k=0", "xp.triu({m}, k={k})", examples=("x", "x, -1")),
    "matmul": entry("a, b, *, precision=None, preferred_element_type=None",
                    "xp.matmul({a}, {b})", examples=("x, w", "b, w")),
    "dot": entry("a, b, *, precision=None, preferred_element_type=None", _dot,
                 examples=("x, w", "v, v", "b, w", "x, v[:, None][:, 0]")),
    "vdot": entry("a, b", "xp.sum(xp.reshape({a}, (-1,)) * xp.reshape({b}, (-1,)))",
                  examples=("x, y",)),
    "outer": entry("a, b", "(xp.reshape({a}, (-1, 1)) * xp.reshape({b}, (1, -1)))",
                   examples=("v, v",)),
    "shape": entry("a", "{a}.shape", returns=PYTHON, examples=("x",)),
    "ndim": entry("a", "{a}.ndim", returns=PYTHON, examples=("x",)),
    "size": entry("a, axis=None", lambda a, axis: f"math.prod({a}.shape)" if axis.is_none
                  else f"{a}.shape[{axis}]", returns=PYTHON, examples=("x", "x, 1")),
    "finfo": entry("dtype", "xp.finfo({dtype})", returns=PYTHON,
                   examples=("jax.numpy.float32", "x.dtype")),
    "linalg.norm": entry("x, ord=None, axis=None, keepdims=False", _norm,
                         examples=("x", "x, axis=1", "x, 2, 0, True")),
    "einsum": entry("subscripts, *operands, out=None, optimize='optimal', precision=None, preferred_element_type=None",
                    lambda subscripts, operands, out, optimize, precision, preferred_element_type:
                    einsum(subscripts, operands), examples=EINSUM_EXAMPLES),
    "take": refusal("jnp.take's out-of-range rule (fill, negative indices wrap) differs "
                    "from xp.take's (zeros): write it with xp.take"),
}

LAX_ENTRIES: dict[str, Entry] = {
    **{k: _unary(v, "x") for k, v in {
        "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "tanh": "tanh",
        "sin": "sin", "cos": "cos", "sqrt": "sqrt", "abs": "abs", "sign": "sign",
        "neg": "negative", "floor": "floor", "ceil": "ceil", "square": "square",
        "erf": "erf"}.items()},
    "rsqrt": entry("x", "(1.0 / xp.sqrt({x}))", examples=("p",)),
    "logistic": entry("x", "(1.0 / (1.0 + xp.exp(-{x})))", examples=("x",)),
    **{k: _binary(t, "x, y") for k, t in {
        "add": "({x} + {y})", "sub": "({x} - {y})", "mul": "({x} * {y})",
        "div": "({x} / {y})", "max": "xp.maximum({x}, {y})",
        "min": "xp.minimum({x}, {y})"}.items()},
    "pow": _binary("({x} ** {y})", "x, y", examples=("p, q", "x, 2.0")),
    "integer_pow": entry("x, y", "({x} ** {y})", examples=("x, 2", "x, 3")),
    "select": entry("pred, on_true, on_false", "xp.where({pred}, {on_true}, {on_false})",
                    examples=("m, x, y",)),
    "clamp": entry("min, x, max", "xp.clip({x}, min={min}, max={max})",
                   examples=("-0.5, x, 0.5",)),
    "stop_gradient": refusal(STOP_GRADIENT),
    **{k: refusal(f"{VALUE_FLOW}: lax.{k}") for k in (
        "cond", "switch", "while_loop", "fori_loop", "scan", "map")},
}

NN_ENTRIES: dict[str, Entry] = {
    "relu": entry("x", "xp.maximum({x}, xp.zeros_like({x}))", examples=("x",)),
    "relu6": entry("x", "xp.clip({x}, min=0.0, max=6.0)", examples=("x * 4",)),
    "sigmoid": entry("x", "(1.0 / (1.0 + xp.exp(-{x})))", examples=("x",)),
    "softplus": entry("x", "xp.logaddexp({x}, xp.zeros_like({x}))", examples=("x * 5",)),
    "log_sigmoid": entry("x", "(-xp.logaddexp(xp.zeros_like({x}), -{x}))",
                         examples=("x",)),
    "silu": entry("x", "({x} / (1.0 + xp.exp(-{x})))", examples=("x",)),
    "swish": entry("x", "({x} / (1.0 + xp.exp(-{x})))", examples=("x",)),
    "soft_sign": entry("x", "({x} / (1.0 + xp.abs({x})))", examples=("x",)),
    "hard_tanh": entry("x", "xp.clip({x}, min=-1.0, max=1.0)", examples=("x * 2",)),
    "elu": entry("x, alpha=1.0", "xp.where({x} > 0, {x}, {alpha} * xp.expm1({x}))",
                 examples=("x", "x, 0.5")),
    "leaky_relu": entry("x, negative_slope=0.01",
                        "xp.where({x} >= 0, {x}, {negative_slope} * {x})",
                        examples=("x", "x, 0.2")),
    "gelu": entry("x, approximate=True", lambda x, approximate: gelu(
        x, approximate, tanh=("True", ""), exact=("False",)), examples=("x", "x, approximate=False")),
    "softmax": _softmax(log=False), "log_softmax": _softmax(log=True),
    "logsumexp": entry("a, axis=None, b=None, keepdims=False, return_sign=False, "
                       "where=None", _logsumexp,
                       examples=("x, 1", "x, 0, keepdims=True", "x")),
    "one_hot": entry("x, num_classes, *, dtype=None, axis=-1", _one_hot,
                     examples=("i, 3",)),
}

METHODS: dict[str, Entry] = {
    "shape": entry("a", "{a}.shape", returns=PYTHON, attribute=True,
                   examples=("x",)),
    "dtype": entry("a", "{a}.dtype", returns=PYTHON, attribute=True,
                   examples=("x", "i")),
    "ndim": entry("a", "{a}.ndim", returns=PYTHON, attribute=True, examples=("x",)),
    "size": entry("a", "math.prod({a}.shape)", returns=PYTHON, attribute=True,
                  examples=("x",)),
    "T": entry("a", "xp.permute_dims({a}, tuple(range({a}.ndim))[::-1])",
               returns=VIEW, attribute=True, examples=("x", "b")),
    "sum": entry("a, axis=None, dtype=None, out=None, keepdims=False",
                 NUMPY["sum"].template, examples=("x", "x, 1")),
    "mean": entry("a, axis=None, dtype=None, out=None, keepdims=False",
                  NUMPY["mean"].template, examples=("x", "x, axis=0")),
    "max": entry("a, axis=None, out=None, keepdims=False", NUMPY["max"].template,
                 examples=("x", "x, 1")),
    "min": entry("a, axis=None, out=None, keepdims=False", NUMPY["min"].template,
                 examples=("x",)),
    "reshape": entry("a, *shape", "xp.reshape({a}, {shape})", returns=VIEW,
                     examples=("x, (2, 6)", "x, 4, 3", "x, -1")),
    "astype": entry("a, dtype", "xp.astype({a}, {dtype})",
                    examples=("i, jax.numpy.float32",)),
    "squeeze": entry("a, axis=None", NUMPY["squeeze"].template, returns=VIEW,
                     examples=("s", "s, 1")),
    "clip": entry("a, min=None, max=None", "xp.clip({a}, min={min}, max={max})",
                  examples=("x, -0.5, 0.5",)),
    "item": refusal(HOST_READ), "tolist": refusal(HOST_READ),
}


def _raise(why: str) -> str:
  raise Refused(why)


TABLE = Table(
    framework="jax",
    roots=("jax",),
    entries={
        **{f"{NP}.{k}": v for k, v in NUMPY.items()},
        **{f"{LAX}.{k}": v for k, v in LAX_ENTRIES.items()},
        **{f"{NN}.{k}": v for k, v in NN_ENTRIES.items()},
        "jax.scipy.special.logsumexp": NN_ENTRIES["logsumexp"],
        "jax.scipy.special.erf": LAX_ENTRIES["erf"],
        "jax.lax.stop_gradient": LAX_ENTRIES["stop_gradient"],
        "jax.stop_gradient": LAX_ENTRIES["stop_gradient"],
        **{f"Array.{k}": v for k, v in METHODS.items()},
    },
    method_prefix="Array",
    constants={**{f"{NP}.{k}": f"xp.{v}" for k, v in _DTYPES.items()},
               f"{NP}.pi": "math.pi", f"{NP}.inf": "math.inf", f"{NP}.nan": "math.nan",
               f"{NP}.e": "math.e", f"{NP}.newaxis": "None"},
    refused={"jax.random.": RANDOM, "jax.pure_callback": EXTENSION,
             "jax.experimental.host_callback": EXTENSION, "jax.debug.": EXTENSION,
             "jax.experimental.io_callback": EXTENSION, "jax.ffi": EXTENSION,
             "jax.extend": EXTENSION,
             **{f"jax.{k}": "autodiff inside the definition: the op language "
                "differentiates nothing itself" for k in ("grad", "vjp", "jvp",
                                                           "value_and_grad", "linearize",
                                                           "jacfwd", "jacrev", "hessian")},
             "jax.jit": "jit inside the definition (the port is compiled where it is used)",
             "jax.vmap": "vmap inside the definition (write the batched form)"},
)
