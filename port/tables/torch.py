"""`TABLE`: torch calls (``torch.*``, ``torch.nn.functional``, Tensor methods) as ``xp``.

Function entries take the tensor first as ``input``; a Tensor method with the same name
and arguments is the same entry (the receiver is its first argument). Defaults follow
torch: ``torch.zeros`` without a dtype is float32, ``squeeze(dim)`` leaves a dimension
that is not 1 alone, ``max(input, dim)`` is ``(values, indices)``.
"""

from __future__ import annotations

from crossgrad.port.translate import (EINSUM_EXAMPLES, HOST_READ, PYTHON, RANDOM, VIEW, Arg,
                                      Entry, Refused, Table, einsum, entry, gelu, refusal)

F = "torch.nn.functional"

# torch dtype -> xp dtype.
_DTYPES = {"float32": "float32", "float": "float32", "float64": "float64",
           "double": "float64", "int64": "int64",
           "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "int8": "int8",
           "uint8": "uint8", "bool": "bool", "complex64": "complex64",
           "complex128": "complex128"}


def _unary(xp_name: str) -> Entry:
  return entry("input", f"xp.{xp_name}({{input}})", examples=("p",) if xp_name in (
      "log", "sqrt", "log1p", "log2", "log10") else ("x",))


def _axis_reduction(xp_name: str, examples=("x", "x, 1", "x, dim=0, keepdim=True",
                                             "x, (0, 1)")) -> Entry:
  return entry("input, dim=None, keepdim=False, *, dtype=None",
               lambda input, dim, keepdim, dtype: (
                   f"xp.{xp_name}({input}, axis={dim}, keepdims={keepdim}"
                   + (f", dtype={dtype})" if not dtype.is_none else ")")),
               examples=examples)


def _extreme(xp_name: str, arg_name: str, pairwise: str) -> Entry:
  """torch.max / min: of all elements, pairwise with another tensor, or along ``dim``
  as (values, indices)."""
  def render(input: Arg, dim: Arg, keepdim: Arg, other: Arg) -> str:
    if dim.is_array or not other.is_none:
      return f"xp.{pairwise}({input}, {other if other.given else dim})"
    if dim.is_none:
      return f"xp.{xp_name}({input})"
    return (f"(xp.{xp_name}({input}, axis={dim}, keepdims={keepdim}), "
            f"xp.{arg_name}({input}, axis={dim}, keepdims={keepdim}))")
  return entry("input, dim=None, keepdim=False, *, other=None", render,
               examples=("x", "x, y", "x, 1", "x, dim=0, keepdim=True"))


def _compare(op: str) -> Entry:
  return entry("input, other", f"({{input}} {op} {{other}})",
               examples=("x, y", "x, 0.5"))


def _cast(dtype: str) -> Entry:
  return entry("input", f"xp.astype({{input}}, xp.{dtype})", examples=("x", "i"))


def _reshape(input: Arg, shape: Arg) -> str:
  return f"xp.reshape({input}, {shape})"


def _squeeze(input: Arg, dim: Arg) -> str:
  if dim.is_none:
    return (f"xp.squeeze({input}, axis=tuple(k for k, n in enumerate({input}.shape) "
            "if n == 1))")
  return f"(xp.squeeze({input}, axis={dim}) if {input}.shape[{dim}] == 1 else {input})"


def _to(input: Arg, args: Arg, dtype: Arg, copy: Arg, non_blocking: Arg) -> str:
  """``.to(dtype)``, ``.to(other)`` (its dtype), ``.to(device)`` (kept on its device)."""
  del copy, non_blocking
  target = None if dtype.is_none else str(dtype)
  for arg in args.parts:
    if arg.is_array:
      target = f"{arg}.dtype"
    elif arg.src.startswith("xp.") or arg.src.endswith(".dtype"):
      target = arg.src
    # Anything else is a device: the port runs where its inputs are.
  return str(input) if target is None else f"xp.astype({input}, {target})"


def _expand(input: Arg, sizes: Arg) -> str:
  if "-1" in sizes.src:
    raise Refused("expand with -1 sizes has no translation")
  return f"xp.broadcast_to({input}, {sizes})"


def _new_dtype(dtype: Arg, default: str = "xp.float32") -> str:
  return default if dtype.is_none else str(dtype)


def _creation(fill: str):
  def render(size: Arg, out: Arg, dtype: Arg, layout: Arg, device: Arg,
             requires_grad: Arg) -> str:
    del out, layout, device, requires_grad
    return f"xp.{fill}({size}, dtype={_new_dtype(dtype)})"
  return entry("*size, out=None, dtype=None, layout=None, device=None, requires_grad=False",
               render, examples=("3, 4", "(2, 3), dtype=torch.float64"))


def _like(fill: str, extra: str = ""):
  def render(input: Arg, fill_value: Arg = None, dtype: Arg = None, layout: Arg = None,
             device: Arg = None, requires_grad: Arg = None, memory_format: Arg = None) -> str:
    del layout, device, requires_grad, memory_format
    value = f", {fill_value}" if fill_value is not None else ""
    kind = f", dtype={dtype}" if not dtype.is_none else ""
    return f"xp.{fill}({input}{value}{kind})"
  spec = (f"input, {extra}*, dtype=None, layout=None, device=None, requires_grad=False, "
          "memory_format=None")
  return entry(spec, render, examples=("x", "x, dtype=torch.float32") if not extra
               else ("x, 0.5",))


def _softmax(log: bool):
  def render(input: Arg, dim: Arg, _stacklevel: Arg, dtype: Arg) -> str:
    del _stacklevel
    x = f"xp.astype({input}, {dtype})" if not dtype.is_none else str(input)
    if dim.is_none:
      raise Refused("softmax without dim (torch's implicit choice is deprecated)")
    shifted = f"({x} - xp.max({x}, axis={dim}, keepdims=True))"
    if log:
      return (f"({shifted} - xp.log(xp.sum(xp.exp({shifted}), axis={dim}, "
              "keepdims=True)))")
    return f"(xp.exp({shifted}) / xp.sum(xp.exp({shifted}), axis={dim}, keepdims=True))"
  return entry("input, dim=None, _stacklevel=3, dtype=None", render,
               examples=("x, 1", "x, dim=0", "x, -1"))


def _logsumexp(input: Arg, dim: Arg, keepdim: Arg) -> str:
  peak = f"xp.max({input}, axis={dim}, keepdims=True)"
  return (f"(xp.log(xp.sum(xp.exp({input} - {peak}), axis={dim}, keepdims={keepdim})) + "
          f"({peak} if {keepdim} else xp.squeeze({peak}, axis={dim})))")


def _softplus(input: Arg, beta: Arg, threshold: Arg) -> str:
  scaled = f"({beta} * {input})"
  return (f"xp.where({scaled} > {threshold}, {input}, "
          f"xp.logaddexp(xp.zeros_like({input}), {scaled}) / {beta})")


def _leaky_relu(input: Arg, negative_slope: Arg, inplace: Arg) -> str:
  _no_inplace(inplace)
  return f"xp.where({input} > 0, {input}, {input} * {negative_slope})"


def _elu(input: Arg, alpha: Arg, inplace: Arg) -> str:
  _no_inplace(inplace)
  return f"xp.where({input} > 0, {input}, {alpha} * xp.expm1({input}))"


def _no_inplace(inplace: Arg) -> None:
  if inplace.src not in ("False", ""):
    raise Refused("inplace=True writes its input")


def _activation(template: str):
  def render(input: Arg, inplace: Arg) -> str:
    _no_inplace(inplace)
    return template.format(x=input)
  return entry("input, inplace=False", render, examples=("x",))


def _hardtanh(input: Arg, min_val: Arg, max_val: Arg, inplace: Arg) -> str:
  _no_inplace(inplace)
  return f"xp.clip({input}, min={min_val}, max={max_val})"


def _normalize(input: Arg, p: Arg, dim: Arg, eps: Arg, out: Arg) -> str:
  del out
  norm = f"xp.linalg.vector_norm({input}, ord={p}, axis={dim}, keepdims=True)"
  return f"({input} / xp.maximum({norm}, xp.full_like({norm}, {eps})))"


def _norm(input: Arg, p: Arg, dim: Arg, keepdim: Arg, dtype: Arg) -> str:
  del dtype
  order = "2" if p.src in ("'fro'", "2", "2.0") else str(p)
  return f"xp.linalg.vector_norm({input}, ord={order}, axis={dim}, keepdims={keepdim})"


def _flatten(input: Arg, start_dim: Arg, end_dim: Arg) -> str:
  x = input
  return (f"xp.reshape({x}, {x}.shape[:{start_dim} % max({x}.ndim, 1)] + (-1,) + "
          f"{x}.shape[{end_dim} % max({x}.ndim, 1) + 1:])")


def _one_hot(tensor: Arg, num_classes: Arg) -> str:
  if num_classes.src == "-1":
    raise Refused("one_hot without num_classes reads the largest label (value-dependent)")
  return f"xp.one_hot({tensor}, {num_classes}, dtype=xp.int64)"


def _add(input: Arg, other: Arg, alpha: Arg) -> str:
  return f"({input} + {other})" if alpha.src in ("1", "") else f"({input} + {alpha} * {other})"


def _sub(input: Arg, other: Arg, alpha: Arg) -> str:
  return f"({input} - {other})" if alpha.src in ("1", "") else f"({input} - {alpha} * {other})"


def _div(input: Arg, other: Arg, rounding_mode: Arg) -> str:
  if rounding_mode.is_none or not rounding_mode.src:
    return f"({input} / {other})"
  if rounding_mode.src == "'floor'":
    return f"xp.floor({input} / {other})"
  if rounding_mode.src == "'trunc'":
    return f"xp.trunc({input} / {other})"
  raise Refused(f"rounding_mode={rounding_mode} has no translation")


def _transpose(input: Arg, dim0: Arg, dim1: Arg) -> str:
  return (f"xp.permute_dims({input}, tuple({dim1} % {input}.ndim if k == {dim0} % "
          f"{input}.ndim else {dim0} % {input}.ndim if k == {dim1} % {input}.ndim else k "
          f"for k in range({input}.ndim)))")



_UNARY = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "log2": "log2",
          "log10": "log10", "tanh": "tanh", "sin": "sin", "cos": "cos", "tan": "tan",
          "sinh": "sinh", "cosh": "cosh", "atan": "atan", "arctan": "atan", "abs": "abs",
          "absolute": "abs", "sign": "sign", "sqrt": "sqrt", "square": "square",
          "floor": "floor", "ceil": "ceil", "round": "round", "trunc": "trunc",
          "neg": "negative", "negative": "negative", "reciprocal": "reciprocal",
          "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
          "signbit": "signbit", "erf": "erf"}
_BINARY = {"maximum": "maximum", "minimum": "minimum", "atan2": "atan2",
           "logical_and": "logical_and", "logical_or": "logical_or",
           "logical_xor": "logical_xor", "logaddexp": "logaddexp", "hypot": "hypot",
           "copysign": "copysign", "remainder": "remainder"}
_COMPARE = {"gt": ">", "greater": ">", "lt": "<", "less": "<", "ge": ">=",
            "greater_equal": ">=", "le": "<=", "less_equal": "<=", "eq": "==", "ne": "!=",
            "not_equal": "!="}

# Entries that are both torch.NAME and Tensor.NAME.
SHARED: dict[str, Entry] = {
    **{name: _unary(xp_name) for name, xp_name in _UNARY.items()},
    **{name: entry("input, other", f"xp.{xp_name}({{input}}, {{other}})",
                   examples=("m, m" if xp_name.startswith("logical") else "x, y",))
       for name, xp_name in _BINARY.items()},
    "logical_not": entry("input", "xp.logical_not({input})", examples=("m",)),
    **{name: _compare(op) for name, op in _COMPARE.items()},
    "sigmoid": entry("input", "(1.0 / (1.0 + xp.exp(-{input})))", examples=("x",)),
    "relu": entry("input", "xp.maximum({input}, xp.zeros_like({input}))", examples=("x",)),
    "rsqrt": entry("input", "(1.0 / xp.sqrt({input}))", examples=("p",)),
    "clamp": entry("input, min=None, max=None", "xp.clip({input}, min={min}, max={max})",
                   examples=("x, -0.5, 0.5", "x, min=0.0", "x, max=y")),
    "clamp_min": entry("input, min", "xp.clip({input}, min={min})", examples=("x, 0.1",)),
    "clamp_max": entry("input, max", "xp.clip({input}, max={max})", examples=("x, 0.1",)),
    "pow": entry("input, exponent", "({input} ** {exponent})",
                 examples=("p, 2", "p, 0.5", "p, q")),
    "add": entry("input, other, *, alpha=1", _add, examples=("x, y", "x, y, alpha=2")),
    "sub": entry("input, other, *, alpha=1", _sub, examples=("x, y", "x, 2.0, alpha=0.5")),
    "subtract": entry("input, other, *, alpha=1", _sub, examples=("x, y",)),
    "mul": entry("input, other", "({input} * {other})", examples=("x, y", "x, 3.0")),
    "multiply": entry("input, other", "({input} * {other})", examples=("x, y",)),
    "div": entry("input, other, *, rounding_mode=None", _div,
                 examples=("x, p", "x, p, rounding_mode='floor'")),
    "divide": entry("input, other, *, rounding_mode=None", _div, examples=("x, p",)),
    "true_divide": entry("input, other", "({input} / {other})", examples=("x, p",)),
    "sum": _axis_reduction("sum"),
    "mean": _axis_reduction("mean"),
    "prod": entry("input, dim=None, keepdim=False, *, dtype=None",
                  "xp.prod({input}, axis={dim}, keepdims={keepdim})",
                  examples=("x", "x, 1", "x, 0, True")),
    "amax": entry("input, dim=(), keepdim=False",
                  lambda input, dim, keepdim: f"xp.max({input}, axis={dim.src if dim.src != '()' else None}, keepdims={keepdim})",
                  examples=("x, 1", "x, dim=(0, 1)")),
    "amin": entry("input, dim=(), keepdim=False",
                  lambda input, dim, keepdim: f"xp.min({input}, axis={dim.src if dim.src != '()' else None}, keepdims={keepdim})",
                  examples=("x, 0",)),
    "max": _extreme("max", "argmax", "maximum"),
    "min": _extreme("min", "argmin", "minimum"),
    "argmax": entry("input, dim=None, keepdim=False",
                    "xp.argmax({input}, axis={dim}, keepdims={keepdim})",
                    examples=("x, 1", "x, dim=0, keepdim=True")),
    "argmin": entry("input, dim=None, keepdim=False",
                    "xp.argmin({input}, axis={dim}, keepdims={keepdim})",
                    examples=("x, 1",)),
    "logsumexp": entry("input, dim, keepdim=False", _logsumexp,
                       examples=("x, 1", "x, 0, True")),
    "cumsum": entry("input, dim, *, dtype=None", "xp.cumulative_sum({input}, axis={dim})",
                    examples=("x, 1", "x, dim=0")),
    "cumprod": entry("input, dim, *, dtype=None", "xp.cumulative_prod({input}, axis={dim})",
                     examples=("p, 1",)),
    "softmax": _softmax(log=False),
    "log_softmax": _softmax(log=True),
    "matmul": entry("input, other", "xp.matmul({input}, {other})", examples=("x, w",)),
    "mm": entry("input, mat2", "xp.matmul({input}, {mat2})", examples=("x, w",)),
    "bmm": entry("input, mat2", "xp.matmul({input}, {mat2})",
                 examples=("b, b.transpose(1, 2)",)),
    "mv": entry("input, vec", "xp.matmul({input}, {vec})", examples=("x, v",)),
    "dot": entry("input, other", "xp.vecdot({input}, {other})", examples=("v, v",)),
    "outer": entry("input, vec2", "({input}[:, None] * {vec2}[None, :])",
                   examples=("v, v",)),
    "transpose": entry("input, dim0, dim1", _transpose, returns=VIEW,
                       examples=("x, 0, 1", "x, -1, -2")),
    "swapaxes": entry("input, axis0, axis1",
                      lambda input, axis0, axis1: _transpose(input, axis0, axis1),
                      returns=VIEW, examples=("x, 0, 1",)),
    "t": entry("input", "xp.matrix_transpose({input})", returns=VIEW, examples=("x",)),
    "unsqueeze": entry("input, dim", "xp.expand_dims({input}, axis={dim})", returns=VIEW,
                       examples=("x, 0", "x, -1", "x, dim=1")),
    "squeeze": entry("input, dim=None", _squeeze, returns=VIEW,
                     examples=("s", "s, 1", "s, 0", "s, dim=-1")),
    "flatten": entry("input, start_dim=0, end_dim=-1", _flatten, returns=VIEW,
                     examples=("x", "x, 1")),
    "flip": entry("input, dims", "xp.flip({input}, axis={dims})", examples=("x, (0,)",
                                                                             "x, [0, 1]")),
    "roll": entry("input, shifts, dims=None", "xp.roll({input}, shift={shifts}, axis={dims})",
                  examples=("x, 1, 0", "x, 2")),
    "diff": entry("input, n=1, dim=-1", "xp.diff({input}, n={n}, axis={dim})",
                  examples=("x", "x, dim=0")),
    "norm": entry("input, p='fro', dim=None, keepdim=False, dtype=None", _norm,
                  examples=("x", "x, dim=1", "x, 1, 0, True")),
}

# torch.NAME only.
FUNCTIONS: dict[str, Entry] = {
    "clip": SHARED["clamp"],
    "zeros_like": _like("zeros_like"),
    "ones_like": _like("ones_like"),
    "full_like": _like("full_like", extra="fill_value, "),
    "zeros": _creation("zeros"),
    "ones": _creation("ones"),
    "full": entry("size, fill_value, *, out=None, dtype=None, layout=None, device=None, "
                  "requires_grad=False",
                  lambda size, fill_value, out, dtype, layout, device, requires_grad:
                  f"xp.full({size}, {fill_value}, dtype={_new_dtype(dtype)})",
                  examples=("(2, 3), 1.5",)),
    "tensor": entry("data, *, dtype=None, device=None, requires_grad=False",
                    lambda data, dtype, device, requires_grad:
                    f"xp.asarray({data}, dtype={_new_dtype(dtype)})",
                    examples=("1.5", "[1.0, 2.0], dtype=torch.float64")),
    "as_tensor": entry("data, dtype=None, device=None",
                       lambda data, dtype, device: f"xp.asarray({data}, dtype={dtype})"
                       if data.is_array else
                       f"xp.asarray({data}, dtype={_new_dtype(dtype)})",
                       examples=("x", "2.5")),
    "arange": entry("start, end=None, step=1, *, dtype=None, device=None, "
                    "requires_grad=False",
                    lambda start, end, step, dtype, device, requires_grad:
                    f"xp.arange({start}, {end}, {step}"
                    + (f", dtype={dtype})" if not dtype.is_none else ")"),
                    examples=("5", "1, 7, 2", "5, dtype=torch.float32")),
    "cat": entry("tensors, dim=0", "xp.concat({tensors}, axis={dim})",
                 examples=("(x, y)", "[x, y], 1", "(x, y), dim=-1")),
    "concat": entry("tensors, dim=0", "xp.concat({tensors}, axis={dim})",
                    examples=("(x, y), 1",)),
    "stack": entry("tensors, dim=0", "xp.stack({tensors}, axis={dim})",
                   examples=("(x, y)", "[x, y], 1")),
    "broadcast_to": entry("input, size", "xp.broadcast_to({input}, {size})", returns=VIEW,
                          examples=("v, (3, 4)",)),
    "permute": entry("input, dims", "xp.permute_dims({input}, {dims})", returns=VIEW,
                     examples=("x, (1, 0)",)),
    "numel": entry("input", "math.prod({input}.shape)", returns=PYTHON, examples=("x",)),
    "is_floating_point": entry("input", "xp.isdtype({input}.dtype, 'real floating')",
                               returns=PYTHON, examples=("x", "i")),
    "finfo": entry("type=None", "xp.finfo({type})", returns=PYTHON,
                   examples=("torch.float32", "x.dtype")),
    "reshape": entry("input, shape", _reshape, returns=VIEW,
                     examples=("x, (2, 6)", "x, (-1,)")),
    "where": entry("condition, input, other", "xp.where({condition}, {input}, {other})",
                   examples=("m, x, y", "m, x, 0.0")),
    "einsum": entry("equation, *operands", einsum, examples=EINSUM_EXAMPLES),
}

# Tensor.NAME only (receiver first).
METHODS: dict[str, Entry] = {
    "reshape": entry("input, *shape", _reshape, returns=VIEW,
                     examples=("x, (2, 6)", "x, -1", "x, 4, 3")),
    "where": entry("input, condition, other", "xp.where({condition}, {input}, {other})",
                   examples=("x, m, y", "x, m, 0.0")),
    "view": entry("input, *shape", _reshape, returns=VIEW,
                  examples=("x, 2, 6", "x, -1", "x, (4, 3)", "x, x.shape")),
    "view_as": entry("input, other", "xp.reshape({input}, {other}.shape)", returns=VIEW,
                     examples=("v[None, :], v",)),
    "reshape_as": entry("input, other", "xp.reshape({input}, {other}.shape)", returns=VIEW,
                        examples=("x, y",)),
    "expand": entry("input, *sizes", _expand, returns=VIEW,
                    examples=("s, 3, 4", "v, (3, 4)")),
    "expand_as": entry("input, other", "xp.broadcast_to({input}, {other}.shape)",
                       returns=VIEW, examples=("s, x",)),
    "permute": entry("input, *dims", "xp.permute_dims({input}, {dims})", returns=VIEW,
                     examples=("x, 1, 0", "x, (1, 0)")),
    "clone": entry("input, *, memory_format=None", "{input}", examples=("x",)),
    "detach": entry("input", "{input}", returns=VIEW, examples=("x",)),
    "contiguous": entry("input, memory_format=None", "{input}", returns=VIEW,
                        examples=("x",)),
    "cpu": entry("input", "{input}", returns=VIEW, examples=("x",)),
    "float": _cast("float32"),
    "double": _cast("float64"),
    "half": refusal("float16 is not a dtype of the op language"),
    "long": _cast("int64"),
    "int": _cast("int32"),
    "bool": _cast("bool"),
    "type_as": entry("input, other", "xp.astype({input}, {other}.dtype)",
                     examples=("i, x",)),
    "to": entry("input, *args, dtype=None, copy=False, non_blocking=False", _to,
                examples=("x, torch.float32", "i, x", "x, dtype=torch.float64", "x, 'cpu'",
                          "i, x.dtype")),
    "masked_fill": entry("input, mask, value",
                         "xp.where({mask}, xp.full_like({input}, {value}), {input})",
                         examples=("x, m, 0.0", "x, x > 0, -1.0")),
    "new_zeros": entry("input, *size, dtype=None, device=None, requires_grad=False",
                       lambda input, size, dtype, device, requires_grad:
                       f"xp.zeros({size}, dtype={_new_dtype(dtype, f'{input}.dtype')})",
                       examples=("x, (2, 3)", "x, 2, 3")),
    "new_ones": entry("input, *size, dtype=None, device=None, requires_grad=False",
                      lambda input, size, dtype, device, requires_grad:
                      f"xp.ones({size}, dtype={_new_dtype(dtype, f'{input}.dtype')})",
                      examples=("x, (2, 3)",)),
    "size": entry("input, dim=None",
                  lambda input, dim: f"{input}.shape" if dim.is_none
                  else f"{input}.shape[{dim}]", returns=PYTHON,
                  examples=("x", "x, 1", "x, -1")),
    "dim": entry("input", "{input}.ndim", returns=PYTHON, examples=("x",)),
    "ndimension": entry("input", "{input}.ndim", returns=PYTHON, examples=("x",)),
    "numel": FUNCTIONS["numel"],
    "is_floating_point": FUNCTIONS["is_floating_point"],
    "item": refusal(HOST_READ),
    "tolist": refusal(HOST_READ),
    "numpy": refusal(HOST_READ),
    "shape": entry("input", "{input}.shape", returns=PYTHON, attribute=True,
                   examples=("x",)),
    "dtype": entry("input", "{input}.dtype", returns=PYTHON, attribute=True,
                   examples=("x", "i", "m")),
    "ndim": entry("input", "{input}.ndim", returns=PYTHON, attribute=True, examples=("x",)),
    "T": entry("input", "xp.permute_dims({input}, tuple(range({input}.ndim))[::-1])",
               returns=VIEW, attribute=True, examples=("x",)),
    "mT": entry("input", "xp.matrix_transpose({input})", returns=VIEW, attribute=True,
                examples=("x", "b")),
    "data": entry("input", "{input}", returns=VIEW, attribute=True, examples=("x",)),
}

# torch.nn.functional.NAME.
FUNCTIONAL: dict[str, Entry] = {
    "relu": _activation("xp.maximum({x}, xp.zeros_like({x}))"),
    "relu6": _activation("xp.clip({x}, min=0.0, max=6.0)"),
    "silu": _activation("({x} / (1.0 + xp.exp(-{x})))"),
    "sigmoid": SHARED["sigmoid"],
    "tanh": SHARED["tanh"],
    "softplus": entry("input, beta=1.0, threshold=20.0", _softplus,
                      examples=("x", "x, beta=2.0", "x * 30, 1.0, 20.0")),
    "leaky_relu": entry("input, negative_slope=0.01, inplace=False", _leaky_relu,
                        examples=("x", "x, 0.2")),
    "elu": entry("input, alpha=1.0, inplace=False", _elu, examples=("x", "x, alpha=0.5")),
    "hardtanh": entry("input, min_val=-1.0, max_val=1.0, inplace=False", _hardtanh,
                      examples=("x * 2", "x, -0.5, 0.5")),
    "logsigmoid": entry("input", "(-xp.logaddexp(xp.zeros_like({input}), -{input}))",
                        examples=("x",)),
    "gelu": entry("input, approximate='none'", lambda input, approximate: gelu(
        input, approximate, tanh=("'tanh'",), exact=("'none'", "")),
                  examples=("x", "x, approximate='tanh'")),
    "softmax": SHARED["softmax"],
    "log_softmax": SHARED["log_softmax"],
    "normalize": entry("input, p=2.0, dim=1, eps=1e-12, out=None", _normalize,
                       examples=("x", "x, dim=0", "x, 1.0, 1")),
    "one_hot": entry("tensor, num_classes=-1", _one_hot, examples=("i, 3",)),
    "dropout": refusal(RANDOM),
}

TABLE = Table(
    framework="torch",
    roots=("torch",),
    entries={
        **{f"torch.{k}": v for k, v in {**SHARED, **FUNCTIONS}.items()},
        **{f"Tensor.{k}": v for k, v in {**SHARED, **METHODS}.items()},
        **{f"{F}.{k}": v for k, v in FUNCTIONAL.items()},
        "torch.special.erf": SHARED["erf"],
    },
    constants={**{f"torch.{k}": f"xp.{v}" for k, v in _DTYPES.items()},
               "torch.pi": "math.pi", "torch.inf": "math.inf", "torch.nan": "math.nan",
               "torch.e": "math.e"},
    refused={"torch.rand": RANDOM, "torch.randn": RANDOM, "torch.randint": RANDOM,
             "torch.randperm": RANDOM, "torch.bernoulli": RANDOM, "torch.multinomial": RANDOM,
             "torch.normal": RANDOM, "torch.poisson": RANDOM, "torch.manual_seed": RANDOM,
             f"{F}.dropout": RANDOM, "torch.ops.": "a call into a compiled extension "
             "(torch.ops): its code is not Python here", "torch.autograd.": "autograd "
             "inside the definition: the op language differentiates nothing itself",
             "torch.utils.cpp_extension": "a compiled extension",
             "torch.cuda": "device-specific code"},
    ignored_contexts=("torch.no_grad", "torch.inference_mode",
                      "torch.autograd.profiler.record_function", "torch.cuda.amp.autocast"),
)
