"""The PyTorch backend: each op becomes a `torch.autograd.Function` (``setup_context`` style).

``xp`` is the Array API namespace for torch (`array_api_compat.torch`) plus crossgrad's
extensions, so the same definitions run here as in NumPy, TensorFlow and JAX. The emitted
function works eagerly, under ``torch.compile(fullgraph=True)``, `torch.func.vmap`
(``generate_vmap_rule``), forward mode (`torch.func.jvp`, `torch.autograd.forward_ad`:
the op's backward transposed, as JAX transposes a VJP) and double backward (the
residuals are recomputed with grad enabled when a graph of the backward is asked for), on
CPU and CUDA, with `torch.nn.Parameter` inputs.

Dynamo refuses an `autograd.Function` that defines ``jvp`` under ``fullgraph=True``, so
every op has a twin without ``jvp`` that the call picks while `torch.compiler.is_compiling`.

In the cross-check, torch computes the ``jvp`` and ``second_order`` rows eagerly and the
``vmap`` rows; compiled, forward mode and double backward cannot run
(`harness.UNSUPPORTED_CHECKS`). What the checker drives is `harness`.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
import types
from typing import Any, Callable, Sequence

import array_api_compat.torch as compat
import numpy as np
import torch
from torch._functorch.utils import unwrap_dead_wrappers as _unwrap_dead_wrappers
from torch.autograd import forward_ad
from torch.utils import _pytree as pytree

from crossgrad.backends.common import base, kernel_core, op_core
from crossgrad.backends.torch import namespace as array_api
from crossgrad.backends.torch import array_object, dynamo_matmul, plain_bodies
from crossgrad.registry import broadcasting, namespace, validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.namespace import CONSTANTS, EXTENSIONS, FUNCTIONS, Namespace

NAME = "torch"
VERSION = torch.__version__
MODES = ("eager", "compile")
ARRAY_MODULES = ("torch",)  # torch.Tensor (protocol.Arrays).

_DTYPES = {name: getattr(torch, name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128")}


def as_dtype(dtype: Any) -> torch.dtype | None:
  """A torch dtype from a torch dtype, a name ("int32") or a NumPy dtype."""
  if dtype is None or isinstance(dtype, torch.dtype):
    return dtype
  name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
  if name not in _DTYPES:
    raise CrossgradError("unknown dtype", backend=NAME, argument="dtype",
                         expected=" or ".join(_DTYPES), actual=repr(dtype))
  return _DTYPES[name]


def _tensor(x: Any, like: torch.Tensor | None = None) -> torch.Tensor:
  """``x`` as a tensor (NumPy arrays and Python numbers on ``like``'s device)."""
  if isinstance(x, torch.Tensor):
    return x
  return torch.as_tensor(np.asarray(x) if isinstance(x, np.ndarray) else x,
                         device=None if like is None else like.device)


# crossgrad's extensions (crossgrad.registry.namespace), the same rules in every backend.

def _take(x, indices, /, *, axis=None):
  """Slices of ``x`` at ``indices`` along ``axis``; zeros where an index is outside [0, n)."""
  x = _tensor(x)
  indices = _tensor(indices, x)
  if indices.dtype not in (torch.int32, torch.int64):  # Any integer dtype, as the standard's:
    indices = indices.to(torch.int64)  # index_select takes int32/64 (nor compares uint16-64).
  axis = namespace.take_axis(NAME, x.ndim, axis)
  if x.shape[axis] == 0:  # Every index is outside [0, 0): zeros, where index_select raises.
    return x.new_zeros(x.shape[:axis] + indices.shape + x.shape[axis + 1:])
  valid = (indices >= 0) & (indices < x.shape[axis])
  flat = torch.where(valid, indices, 0).reshape(-1)
  picked = torch.index_select(x, axis, flat).reshape(
      x.shape[:axis] + indices.shape + x.shape[axis + 1:])
  mask = valid.reshape((1,) * axis + tuple(valid.shape) + (1,) * (x.ndim - axis - 1))
  return torch.where(mask, picked, torch.zeros((), dtype=x.dtype, device=x.device))


def _segment_ids(name, segment_ids, data, num_segments):
  """Ids as int64 with every id outside [0, num_segments) sent to the spare row."""
  ids = _tensor(segment_ids, data)
  namespace.check_segment_ids(NAME, name, data.shape, ids.shape)
  inside = (ids >= 0) & (ids < num_segments)
  return torch.where(inside, ids, num_segments).to(torch.int64)


def _segment_sum(data, segment_ids, /, num_segments):
  data = _tensor(data)
  ids = _segment_ids("segment_sum", segment_ids, data, num_segments)
  out = torch.zeros((num_segments + 1,) + tuple(data.shape[1:]), dtype=data.dtype,
                    device=data.device)
  return out.index_add(0, ids, data)[:num_segments]


def _largest(dtype: torch.dtype):
  return (torch.finfo(dtype).max if dtype.is_floating_point else torch.iinfo(dtype).max)


def _segment_min(data, segment_ids, /, num_segments):
  data = _tensor(data)
  ids = _segment_ids("segment_min", segment_ids, data, num_segments)
  ids = ids.reshape((-1,) + (1,) * (data.ndim - 1)).expand(data.shape)
  out = torch.full((num_segments + 1,) + tuple(data.shape[1:]), _largest(data.dtype),
                   dtype=data.dtype, device=data.device)
  return out.scatter_reduce(0, ids, data, "amin")[:num_segments]


def _one_hot(x, num_classes, /, *, dtype):
  x = _tensor(x)
  return (x.unsqueeze(-1) == torch.arange(num_classes, device=x.device)).to(as_dtype(dtype))


def _erf(x, /):
  return torch.special.erf(_tensor(x))


def _unbroadcast(x, like, /):
  x = _tensor(x)
  if x.shape == like.shape:  # Nothing was broadcast: no kernel.
    return x
  shape = tuple(like.shape)
  axes = tuple(broadcasting.sum_axes(tuple(x.shape), shape))
  if axes and x.ndim == len(shape):  # Only size-1 axes were broadcast: keep them.
    return torch.sum(x, dim=axes, keepdim=True)
  return torch.reshape(torch.sum(x, dim=axes) if axes else x, shape)


# The standard's functions where torch (or array_api_compat) needs crossgrad's rules.

def _astype(x, dtype, /, *, copy=True, device=None):
  del copy
  x = _tensor(x)
  return x.to(dtype=as_dtype(dtype), device=device)


def _creation(fn):
  def create(shape, *, dtype=None, device=None):
    return fn(shape, dtype=as_dtype(dtype), device=device)
  return create


def _arange(start, /, stop=None, step=1, *, dtype=None, device=None):
  return compat.arange(start, stop, step, dtype=as_dtype(dtype), device=device)


def _full(shape, fill_value, *, dtype=None, device=None):
  return compat.full(shape, fill_value, dtype=as_dtype(dtype), device=device)


def _asarray(obj, /, *, dtype=None, device=None, copy=None):
  return array_api.asarray(obj, dtype=as_dtype(dtype), device=device, copy=copy)


def _cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  """The standard's dtype rule (``array_api``), ``dtype`` also a name."""
  return array_api.FIXES["cumulative_sum"](
      _tensor(x), axis=axis, dtype=as_dtype(dtype), include_initial=include_initial)


def _concat(arrays, /, *, axis=0):
  return compat.concat([_tensor(a) for a in arrays], axis=axis)


# The Array API standard's names (`registry.namespace`), as `array_api_compat` gives them for
# torch unless crossgrad's own rule is in `_OWN`.
STANDARD = FUNCTIONS + CONSTANTS + tuple(_DTYPES)


_OWN = {
    "take": _take, "segment_sum": _segment_sum, "segment_min": _segment_min,
    "one_hot": _one_hot, "unbroadcast": _unbroadcast, "erf": _erf,
    "astype": _astype,
    "zeros": _creation(compat.zeros), "ones": _creation(compat.ones),
    "empty": _creation(compat.empty), "full": _full, "arange": _arange, "asarray": _asarray,
    "cumulative_sum": _cumulative_sum, "concat": _concat,
}


def _numpy_as_tensors(fn):
  """``fn`` taking NumPy arrays too (as JAX and TF functions do), on the tensors' device."""
  @functools.wraps(fn)  # Its signature too (inspect.signature follows __wrapped__).
  def call(*args, **kwargs):
    for a in args:  # A loop, not any(genexpr): this runs on every xp call of an op.
      if isinstance(a, np.ndarray):
        like = next((a for a in args if isinstance(a, torch.Tensor)), None)
        args = [_tensor(a, like) if isinstance(a, np.ndarray) else a for a in args]
        break
    return fn(*args, **kwargs)
  return call


def _standard() -> types.SimpleNamespace:
  """The standard's names for torch: array_api_compat's (but for crossgrad's fixes in
  `array_api`), taking NumPy arrays too."""
  found = {name: array_api.FIXES[name] if name in array_api.FIXES
           else getattr(compat, name)
           for name in STANDARD if name not in _OWN}
  names = {name: _numpy_as_tensors(value) if callable(value) else value
           for name, value in found.items()}
  return types.SimpleNamespace(**names, linalg=compat.linalg, fft=compat.fft)


_STANDARD = _standard()


def _namespace(own: dict[str, Callable[..., Any]]) -> Namespace:
  """``xp`` with crossgrad's own functions ``own`` (extensions and overrides)."""
  return Namespace(NAME, _STANDARD, extensions={name: own[name] for name in EXTENSIONS},
                   overrides={k: v for k, v in own.items() if k not in EXTENSIONS})


xp = _namespace(_OWN)


_DTYPE_NAMES = {dtype: name for name, dtype in _DTYPES.items()}


def spec_of(x: Any) -> validation.ArraySpec:
  """Static shape and dtype of a tensor (at trace time too)."""
  name = _DTYPE_NAMES.get(x.dtype) or str(x.dtype).removeprefix("torch.")
  return validation.ArraySpec(tuple(x.shape), name)


def _key_of(x: torch.Tensor) -> tuple[torch.Size, torch.dtype]:
  """What the op core's per-signature caches know a tensor by: ``spec_of``'s facts, without
  building an `ArraySpec` on every call."""
  return x.shape, x.dtype


def _traced(x: torch.Tensor) -> bool:
  """Whether ``x``'s values are unknown here: under compile or a torch.func transform."""
  wrapped = torch._C._functorch.is_functorch_wrapped_tensor  # pylint: disable=protected-access
  return (torch.compiler.is_compiling() or wrapped(x) or x.is_meta
          or type(x).__name__ == "FakeTensor")


def _read_values(x: Any):
  """NumPy values of an eager tensor (an op body's array too); None where traced."""
  if type(x) is array_object.Array:
    x = x.native
  if not isinstance(x, torch.Tensor):
    return NotImplemented
  if _traced(x):
    return None
  # A plain tensor under a torch.func transform (a constant of `torch.func.vjp`) has its
  # values; `detach` there would wrap it, without storage.
  with torch._C._DisableFuncTorch():  # pylint: disable=protected-access
    x = x.detach().cpu()
    return x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()


# The dtypes torch.aminmax reduces (on CPU: not bool, complex, uint16-64).
_BOUNDED = frozenset(getattr(torch, name) for name in (
    "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64"))


def _read_bounds(x: Any):
  """``(min, max)`` of a real eager tensor by one torch reduction; None where traced or
  empty."""
  if type(x) is array_object.Array:
    x = x.native
  if not isinstance(x, torch.Tensor):
    return NotImplemented
  if _traced(x):
    return None
  if x.dtype not in _BOUNDED:
    return NotImplemented
  if x.numel() == 0:
    return None
  low, high = torch.aminmax(x.detach() if x.requires_grad else x)
  return low.item(), high.item()


validation.register_value_reader(_read_values)
validation.register_bounds_reader(_read_bounds)


# The standard's creation functions that take a ``device`` and have no array to follow.
CREATION = ("arange", "asarray", "empty", "eye", "full", "linspace", "ones", "zeros")


def _defaulting_to(device: torch.device, create: Callable[..., Any]) -> Callable[..., Any]:
  """``create`` making its array on ``device`` where the call names none."""
  def on_device(*args, **kwargs):
    if kwargs.get("device") is None:
      kwargs["device"] = device
    return create(*args, **kwargs)
  return on_device


def _namespace_on(device: torch.device) -> Namespace:
  """``xp`` with its creation functions (`CREATION`) defaulting to ``device``."""
  own = dict(_OWN)
  for name in CREATION:
    own[name] = _defaulting_to(device, own.get(name) or getattr(_STANDARD, name))
  return _namespace(own)


# One namespace per accelerator, made ahead of any compiled call: Dynamo traces the op's
# rules as a higher-order op, where neither a `torch.device` context manager ("Dynamo
# does not know how to enter a `device` context manager") nor adding to a module's dict
# is allowed. A device met later (or `meta`) gets its namespace on its first eager call.
_ON_DEVICE: dict[torch.device, Namespace] = {
    torch.device("cuda", i): _namespace_on(torch.device("cuda", i))
    for i in range(torch.cuda.device_count())}


_BODY_XP = array_object.BodyNamespace(xp)
_BODY_ON_DEVICE = {device: array_object.BodyNamespace(ns)
                   for device, ns in _ON_DEVICE.items()}


def _body_on(device: torch.device) -> array_object.BodyNamespace:
  """The ``xp`` an op's body gets for arrays on ``device`` (`array_object`): creation
  functions in it (``xp.zeros``) make arrays there, not on the CPU (`xp` itself)."""
  if device.type == "cpu":
    return _BODY_XP
  found = _BODY_ON_DEVICE.get(device)
  if found is None and not torch.compiler.is_compiling():
    _ON_DEVICE[device] = _namespace_on(device)
    found = _BODY_ON_DEVICE[device] = array_object.BodyNamespace(_ON_DEVICE[device])
  return found or _BODY_XP


array_object.use_namespace(xp, _body_on)
dynamo_matmul.install_when_dynamo_loads(array_object.Array)  # `a @ b` in bodies.


def _namespace_for(tensors: Sequence[Any]) -> Any:
  """The ``xp`` an op's forward or backward gets: the body namespace of the inputs' device
  (`_body_on`); with `array_object.native_arrays`, the plain one."""
  device = None
  for x in tensors:
    if isinstance(x, torch.Tensor) and not x.is_cpu:
      device = x.device
      break
  if array_object.enabled():
    return _BODY_XP if device is None else _body_on(device)
  if device is None:
    return xp
  found = _ON_DEVICE.get(device)
  if found is None and not torch.compiler.is_compiling():
    found = _ON_DEVICE[device] = _namespace_on(device)
  return found or xp


# Plain loops, not generator expressions, in the helpers below: they run on every call.

def _position(x, group) -> int | None:
  """The index of the object ``x`` itself in ``group``, or None."""
  for i, y in enumerate(group):
    if y is x:
      return i
  return None


def _is_flat(residuals) -> bool:
  """A tuple of no containers: the common case, without pytree's cost."""
  if type(residuals) is not tuple:
    return False
  for r in residuals:
    if isinstance(r, (tuple, list, dict)):
      return False
  return True


def _returnable(output, inputs):
  """An output as the Function's forward returns it. An input itself becomes a view of it
  (torch's rule for an input returned as-is). Under forward-mode AD an input, or a view
  (``reshape``, ``x[0]``), becomes a copy: torch requires the tangent of an output that
  views an input to be a view of that input's tangent, which the op's rule need not be
  (a gradient reversal's ``-g``: "the jvp is not returning a view")."""
  is_input = _position(output, inputs) is not None
  forward_mode = (not torch.compiler.is_compiling()  # The compiled Function has no jvp.
                  and forward_ad._current_level >= 0)  # pylint: disable=protected-access
  if forward_mode and (is_input or output._is_view()):
    return output.clone()
  return output.view_as(output) if is_input else output


def _split_residuals(residuals, inputs, outputs):
  """Residual leaves as references to inputs and outputs, new tensors and constants."""
  flat = _is_flat(residuals)
  leaves, spec = (residuals, None) if flat else pytree.tree_flatten(residuals)
  kinds, new = [], []
  for leaf in leaves:
    if not isinstance(leaf, torch.Tensor):
      kinds.append(("constant", leaf))
    elif (index := _position(leaf, inputs)) is not None:
      kinds.append(("input", index))
    elif (index := _position(leaf, outputs)) is not None:
      kinds.append(("output", index))
    else:
      kinds.append(("new", len(new)))
      new.append(leaf)
  return tuple(new), (spec, tuple(kinds))


def _join_residuals(layout, inputs, outputs, new):
  spec, kinds = layout
  groups = {"input": inputs, "output": outputs, "new": new}
  leaves = [value if kind == "constant" else groups[kind][value] for kind, value in kinds]
  return tuple(leaves) if spec is None else pytree.tree_unflatten(leaves, spec)


def _to_tensors(inputs: Sequence[Any]) -> list[torch.Tensor]:
  """The inputs as tensors, NumPy arrays and numbers on the first tensor's device."""
  for x in inputs:  # The common case first: tensors only, taken as they are.
    if not isinstance(x, torch.Tensor):
      break
  else:
    return list(inputs)
  like = next((x for x in inputs if isinstance(x, torch.Tensor)), None)
  return [_tensor(x, like) for x in inputs]


# Its complex gradients are the conjugates of JAX's VJP: the op core converts a complex
# op's backward, the cross-check converts back (docs/dtypes.md).
CONJUGATE_COMPLEX_GRADIENTS = True
_CORE = op_core.Adapter(NAME, xp, spec_of, key_of=_key_of, to_arrays=_to_tensors,
                        namespace_for=_namespace_for,
                        make_body=lambda: plain_bodies.PlainBodies(_BODY_XP),
                        conjugate_complex=CONJUGATE_COMPLEX_GRADIENTS,
                        tracing=torch.compiler.is_compiling,
                        constant_at_trace=lambda fn: _constant_at_trace(fn))  # Below.


def _inexact(x: torch.Tensor) -> bool:
  """Floating or complex: a tensor that carries a gradient."""
  return x.is_floating_point() or x.is_complex()


# Every op core made, by index. Dynamo traces an autograd.Function's rules without a source
# for what their closures hold, and before torch 2.13 it cannot build a variable for an
# object held there without one (neither the core nor a bound method of it: "Unexpected
# type in sourceless builder", every compile row red); a core reached through this module
# global has a source in every version. A dict, not a list: Dynamo guards a list's length,
# so each new op would recompile every compiled caller. Cores live as long as `get`'s cache.
_CORES: dict[int, op_core.OpCore] = {}


def _forward_rules(index: int):
  """``forward``, ``to_save``, ``setup_context`` and ``saved`` (the inputs and residuals
  back from the context) of the `torch.autograd.Function` of ``_CORES[index]``. The
  forward's last output (not a tensor) carries the output count, the specs and the
  residuals' layout."""
  input_names = _CORES[index].op.input_names
  n_inputs = len(input_names)

  def forward(*inputs):
    result = _CORES[index].forward(inputs)
    outs = tuple([_returnable(o, inputs) for o in result.outs])
    new, layout = _split_residuals(result.residuals, inputs, outs)
    return (*outs, *new, (len(outs), result.specs, layout))

  # One parameter per input: Dynamo counts them to tell forward(ctx, ...) from forward(...).
  forward.__signature__ = inspect.Signature(
      [inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY)
       for name in input_names])

  def to_save(ctx, inputs, output):
    """The inputs (for double backward), the outputs the residuals name, the new ones."""
    n_outputs, ctx.specs, layout = output[-1]
    outs, new = output[:n_outputs], output[n_outputs:-1]
    named = sorted({i for kind, i in layout[1] if kind == "output"})
    ctx.layout, ctx.named_outputs, ctx.counts = layout, named, (n_inputs, n_outputs, len(new))
    return (*inputs, *(outs[i] for i in named), *new)

  def setup_context(ctx, inputs, output):
    n_outputs = output[-1][0]
    outs, new = output[:n_outputs], output[n_outputs:-1]
    ctx.set_materialize_grads(False)
    ctx.mark_non_differentiable(*new, *(o for o in outs if not _inexact(o)))
    ctx.device = outs[0].device
    tensors = to_save(ctx, inputs, output)
    ctx.save_for_backward(*tensors)
    return tensors

  def saved(ctx, tensors):
    n_in, n_named = ctx.counts[0], len(ctx.named_outputs)
    outs = dict(zip(ctx.named_outputs, tensors[n_in:n_in + n_named]))
    inputs, new = tensors[:n_in], tensors[n_in + n_named:]
    return inputs, _join_residuals(ctx.layout, inputs, outs, new)

  return forward, to_save, setup_context, saved


def _backward_rules(index: int, saved: Callable[..., Any]):
  """``backward`` and ``jvp`` of the `torch.autograd.Function` of ``_CORES[index]``."""
  def zeros(ctx, i):
    spec = ctx.specs.outputs[i]
    return torch.zeros(spec.shape, dtype=as_dtype(spec.dtype), device=ctx.device)

  diff = _CORES[index].op.diff_argnums

  def cotangents(ctx, inputs, residuals, upstream):
    return _CORES[index].backward(residuals, upstream, ctx.specs, lambda i: zeros(ctx, i),
                                  on=inputs)

  def backward(ctx, *upstream):
    inputs, residuals = saved(ctx, ctx.saved_tensors)
    if torch.is_grad_enabled():  # A graph of this backward is asked for (double backward):
      residuals = _CORES[index].forward(inputs).residuals  # residuals that carry the inputs' history.
    return cotangents(ctx, inputs, residuals, upstream[:ctx.counts[1]])

  def jvp(ctx, *tangents):
    """The output tangents: the backward's transpose (it is linear in g) at the tangents."""
    inputs, residuals = saved(ctx, ctx.saved_tensors)
    floating = [i for i, s in enumerate(ctx.specs.outputs) if s.is_inexact]

    def diff_cotangents(*g):
      upstream = [None] * len(ctx.specs.outputs)
      for i, gi in zip(floating, g):
        upstream[i] = gi
      cts = cotangents(ctx, inputs, residuals, upstream)
      return tuple(cts[i] for i in diff)

    _, transpose = torch.func.vjp(diff_cotangents, *(zeros(ctx, i) for i in floating))
    out_tangents = transpose(tuple(
        torch.zeros_like(inputs[i]) if tangents[i] is None else tangents[i] for i in diff))
    _, n_outputs, n_new = ctx.counts
    result = [None] * (n_outputs + n_new + 1)
    for i, t in zip(floating, out_tangents):
      result[i] = t
    return tuple(result)

  return backward, jvp


def _apply(function: type[torch.autograd.Function], tensors: Sequence[Any]) -> Any:
  """``function.apply(*tensors)`` eagerly: what torch's `Function.apply` does outside
  functorch transforms, less its `inspect.signature` binding of the arguments to the
  forward's, which binds nothing here (one positional-only parameter per input)."""
  if torch._C._are_functorch_transforms_active():  # pylint: disable=protected-access
    return function.apply(*tensors)
  return super(torch.autograd.Function, function).apply(*_unwrap_dead_wrappers(tensors))


def _primitive(core: op_core.OpCore) -> Callable[..., Any]:
  """The op as a `torch.autograd.Function` (``function``) and its twin without ``jvp``
  (``compiled_function``), which the call picks while torch.compile traces."""
  op = core.op
  if torch.compiler.is_compiling():
    raise CrossgradError(
        "an op is made while torch.compile traces", op=op.name, backend=NAME,
        argument="crossgrad.torch.get",
        hint=f"Call crossgrad.torch.get({op.name!r}, ...) once outside the compiled function "
             "(e.g. at module level) and call the result inside it")
  index = len(_CORES)
  _CORES[index] = core
  forward, to_save, setup_context, saved = _forward_rules(index)
  backward, jvp = _backward_rules(index, saved)

  def setup_context_with_tangents(ctx, inputs, output):
    ctx.save_for_forward(*setup_context(ctx, inputs, output))

  class_name = "".join(part.capitalize() for part in op.name.replace(".", "_").split("_"))
  methods = {"forward": staticmethod(forward), "backward": staticmethod(backward),
             "generate_vmap_rule": True, "__doc__": f"crossgrad op '{op.name}' {core.params}."}
  full = type(class_name, (torch.autograd.Function,), {
      **methods, "setup_context": staticmethod(setup_context_with_tangents),
      "jvp": staticmethod(jvp)})
  # Dynamo rejects a Function with jvp under fullgraph=True: compiled code gets this twin.
  compiled = type(class_name + "Compiled", (torch.autograd.Function,), {
      **methods, "setup_context": staticmethod(setup_context)})

  def run(*tensors):
    result = compiled.apply(*tensors) if torch.compiler.is_compiling() else _apply(full, tensors)
    n_outputs, specs = result[-1][:2]
    return result[0] if specs.single else tuple(result[:n_outputs])

  run.function, run.compiled_function = full, compiled
  return run


get = base.make_get(NAME, op_core.emitter(_CORE, _primitive), kernel_core.wrapper(_CORE))

_cpu_devices = 1


def set_cpu_device_count(count: int) -> int:
  """Names the host CPU ``cpu:0`` ... ``cpu:count-1`` (one torch device, as TF's logical
  CPU devices share one CPU), so cross-device rows run without accelerators."""
  global _cpu_devices
  _cpu_devices = int(count)
  return _cpu_devices


_cache_start: dict[str, int] = {}


def _autograd_cache_counts() -> dict[str, int]:
  from torch._dynamo import utils  # pylint: disable=g-import-not-at-top
  counts = utils.counters["aot_autograd"]
  return {"hits": counts["autograd_cache_hit"],
          "misses": counts["autograd_cache_miss"] + counts["autograd_cache_bypass"]}


def enable_compile_cache(directory: str) -> None:
  """Inductor's FX graph cache and AOTAutograd's cache in ``directory``, crossgrad's ops
  included: AOTAutograd skips graphs with a custom `torch.autograd.Function` unless told
  otherwise, and every crossgrad op is one. That is sound for them: Dynamo traces the
  Function's forward and backward into the graph, so both are part of the cache key."""
  from torch._functorch import config as functorch_config  # pylint: disable=g-import-not-at-top
  from torch._inductor import config as inductor_config  # pylint: disable=g-import-not-at-top
  os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory  # Where Inductor reads it, every time.
  inductor_config.fx_graph_cache = True
  functorch_config.enable_autograd_cache = True
  functorch_config.autograd_cache_allow_custom_autograd_functions = True
  _cache_start.update(_autograd_cache_counts())


def compile_cache_stats() -> dict[str, int]:
  """AOTAutograd cache hits and misses (a bypass counts as a miss) since
  `enable_compile_cache` (``{}`` before): one per graph torch.compile compiles."""
  if not _cache_start:
    return {}
  return {k: v - _cache_start[k] for k, v in _autograd_cache_counts().items()}


def devices() -> list[str]:
  """The CPU (``cpu:0``, or the count `set_cpu_device_count` set) and every CUDA device."""
  return ([f"cpu:{i}" for i in range(_cpu_devices)]
          + [f"cuda:{i}" for i in range(torch.cuda.device_count())])


def find_device(name: str) -> torch.device:
  """The torch device of a name from `devices` (``cpu:1`` is the CPU)."""
  if name not in devices():
    raise CrossgradError("unknown device", backend=NAME, argument="device",
                         expected=" or ".join(devices()), actual=repr(name))
  platform, index = name.split(":")
  return torch.device("cpu") if platform == "cpu" else torch.device(platform, int(index))


_WARM_UP: threading.Thread | None = None  # `warm_up`'s probe, once started.


def _probe_cpu() -> None:
  from torch._inductor import cpu_vec_isa  # pylint: disable=g-import-not-at-top
  try:
    cpu_vec_isa.pick_vec_isa()
  except Exception:  # pylint: disable=broad-except  # The first compile probes and says.
    pass


def warm_up(modes: Sequence[str]) -> None:
  """Starts, in a background thread, what the first ``torch.compile`` on the CPU would
  otherwise do first: Inductor's probe of the CPU's vector instruction sets (a C++ test
  program built per instruction set, several seconds of compiler time on a cold Inductor
  cache, under a file lock that other processes sharing the cache wait on). The compiler
  runs alongside the caller's other work; `harness._compiled` waits for it. Only with
  ``"compile"`` in ``modes``; once per process."""
  global _WARM_UP
  if "compile" in modes and _WARM_UP is None:
    _WARM_UP = threading.Thread(target=_probe_cpu, name="crossgrad-inductor-probe",
                                daemon=True)
    _WARM_UP.start()


def _wait_for_warm_up() -> None:
  """Waits for `warm_up`'s probe. It imports Inductor, which imports Dynamo: another thread
  importing either meanwhile can deadlock on their import locks."""
  if _WARM_UP is not None:
    _WARM_UP.join()


def _constant_at_trace(fn: Callable[..., Any]) -> Callable[..., Any]:
  """``fn`` marked for Dynamo to call while it traces, its result a constant
  (`torch.compiler.assume_constant_result`, which imports Dynamo: after the probe)."""
  _wait_for_warm_up()
  return torch.compiler.assume_constant_result(fn)


def register_container(cls: type, flatten: Callable, unflatten: Callable) -> None:
  """Registers ``cls`` as a torch pytree node (once), for `torch.func` and `torch.compile`."""
  try:
    pytree.register_pytree_node(cls, flatten,
                                lambda children, aux: unflatten(aux, list(children)))
  except ValueError:  # Already registered.
    pass
