"""The JAX backend: each op becomes a `jax.custom_jvp` function written in `jax.numpy`,
under `jax.jit` (an eager call runs one compiled program, as `jax.numpy`'s functions do).

Its tangent rule is the transpose of the op's backward, as a `linear` primitive whose
transpose is the backward as written: `jax.jvp`, `jacfwd`, `linearize` and `hessian` work,
and reverse mode (`jax.grad`) compiles to the program a hand-written `jax.custom_vjp`
would. A surrogate gradient stays a surrogate in both directions: the forward-mode
derivative is the transpose of the backward, never the forward's own derivative.

What the checker drives is `harness`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jex

from crossgrad.backends.common import base, kernel_core, op_core
from crossgrad.backends.jax import namespace as array_api
from crossgrad.backends.jax import array_object, linear
from crossgrad.registry import namespace, numpy_like, validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.namespace import Namespace
from crossgrad.registry.opdef import OpDef

NAME = "jax"
VERSION = jax.__version__
MODES = ("eager", "jit")
ARRAY_MODULES = ("jax", "jaxlib")  # jax.Array and tracers (protocol.Arrays).
PLATFORMS = ("cpu", "gpu", "tpu")


def _one_hot(x, num_classes, /, *, dtype):
  return jax.nn.one_hot(x, num_classes, dtype=dtype)


def _segment_min(data, segment_ids, /, num_segments):
  namespace.check_segment_ids(NAME, "segment_min", jnp.shape(data), jnp.shape(segment_ids))
  out = jax.ops.segment_min(data, segment_ids, num_segments)
  if jnp.issubdtype(out.dtype, jnp.floating):  # Empty segments hold inf in JAX.
    out = jnp.minimum(out, jnp.finfo(out.dtype).max)
  return out


def _segment_sum(data, segment_ids, /, num_segments):
  namespace.check_segment_ids(NAME, "segment_sum", jnp.shape(data), jnp.shape(segment_ids))
  return jax.ops.segment_sum(data, segment_ids, num_segments)  # Drops out-of-range ids.


xp = Namespace(NAME, jnp, extensions={
    "take": functools.partial(numpy_like.take, jnp, NAME), "segment_sum": _segment_sum,
    "segment_min": _segment_min, "one_hot": _one_hot,
    "unbroadcast": functools.partial(numpy_like.unbroadcast, jnp),
    "erf": lambda x, /: jax.lax.erf(x)},
    overrides=array_api.FIXES)  # Where jax.numpy departs from the standard.


def spec_of(x: Any) -> validation.ArraySpec:
  return validation.ArraySpec(tuple(np.shape(x)), jnp.dtype(x.dtype).name)


array_object.use_namespace(xp)


def _body(fn: Callable[..., Any], namespace_: Any, args: Sequence[Any], params: dict) -> Any:
  """An op's forward or backward with the standard's array object inside
  (`array_object`: ``device`` and ``to_device`` on tracers), JAX's arrays outside."""
  if not array_object.enabled():
    return fn(namespace_, *args, **params)
  wrapped = array_object.wrap(tuple(args))
  return array_object.unwrap(fn(array_object.body_namespace(), *wrapped, **params))


_CORE = op_core.Adapter(
    NAME, xp, spec_of,
    to_arrays=lambda inputs: [x if isinstance(x, jax.Array) else jnp.asarray(x) for x in inputs],
    make_body=lambda: op_core.EveryCall(_body))
# The specs a backward validates against travel as static pytree aux data.
jax.tree_util.register_static(op_core.Specs)


def _is_array(x: Any) -> bool:
  return isinstance(x, (jax.Array, np.ndarray))


def _used(jaxpr) -> list[bool]:
  """For each input of ``jaxpr``, whether an equation or an output reads it."""
  read = {v for eqn in jaxpr.eqns for v in eqn.invars if not isinstance(v, jex.Literal)}
  read.update(v for v in jaxpr.outvars if not isinstance(v, jex.Literal))
  return [v in read for v in jaxpr.invars]


def _depends_on(jaxpr, sources: Sequence[Any]) -> list[bool]:
  """For each output of ``jaxpr``, whether it reads any of the variables ``sources``."""
  reached = set(sources)
  for eqn in jaxpr.eqns:
    if any(not isinstance(v, jex.Literal) and v in reached for v in eqn.invars):
      reached.update(eqn.outvars)
  return [not isinstance(v, jex.Literal) and v in reached for v in jaxpr.outvars]


def _check_linear(op: OpDef, closed, n_res: int, moving: Sequence[int]):
  """Each cotangent must read g, or be a constant zero: `jax.linear_transpose` would
  read a term without g as zero, and forward mode would then disagree with the backward."""
  jaxpr = closed.jaxpr
  reads_g = _depends_on(jaxpr, jaxpr.invars[n_res:])
  reads_any = _depends_on(jaxpr, jaxpr.invars)
  constant = [i for i, a in zip(moving, reads_any) if not a]
  for i, g, a in zip(moving, reads_g, reads_any):
    if a and not g:
      raise _not_linear(op, "it reads the residuals but not g",
                        f"cotangent for input '{op.input_names[i]}'")
  if constant:
    with jax.ensure_compile_time_eval():
      values = jex.jaxpr_as_fun(closed)(
          *(jnp.zeros(v.aval.shape, v.aval.dtype) for v in jaxpr.invars))
      nonzero = [bool(jnp.any(value != 0)) for value in values]
    for i, bad in zip(moving, nonzero):
      if i in constant and bad:
        raise _not_linear(op, "it is a nonzero constant",
                          f"cotangent for input '{op.input_names[i]}'")


def _not_linear(op: OpDef, actual: str, where: str = "backward") -> CrossgradError:
  return CrossgradError(
      "backward is not linear in the cotangent g", op=op.name, backend=NAME, argument=where,
      expected="a backward linear in g (its transpose is the op's forward-mode derivative)",
      actual=actual,
      hint="Multiply g by values computed from the residuals; never square g, branch on it "
           "or add a constant to it")


_READ: dict[Any, list[int]] = {}  # _trace_key -> the residual leaves the backward reads.


def _trace_key(op, params, tree, leaves, dynamic, moving, in_specs, out_specs):
  """What the transposed backward's trace depends on besides array shapes, or None when
  a static residual cannot be hashed (then it is traced afresh each time)."""
  static = tuple(leaf for k, leaf in enumerate(leaves) if k not in dynamic)
  key = (op, tuple(sorted(params.items())), tree, static, tuple(dynamic), tuple(moving),
         tuple(in_specs), tuple(out_specs), jax.config.jax_enable_x64)
  try:
    hash(key)
  except TypeError:
    return None
  return key


def _output_tangents(core: op_core.OpCore, outputs, result: op_core.Forward, tangents):
  """The op's forward-mode derivative: the transpose of its backward applied to the input
  tangents (`linear`: reverse mode transposes it back to the backward as written)."""
  op, params, specs = core.op, core.params, result.specs
  outs = validation.as_tuple(outputs)
  single, in_specs, out_specs = specs.single, specs.inputs, specs.outputs
  floating = [k for k, spec in enumerate(out_specs) if spec.is_inexact]
  moving = [i for i in op.diff_argnums
            if not isinstance(tangents[i], jax.custom_derivatives.SymbolicZero)]
  leaves, tree = jax.tree_util.tree_flatten(result.residuals)
  dynamic = [k for k, leaf in enumerate(leaves) if _is_array(leaf)]

  def backward(res, g_floating):
    full = list(leaves)
    for k, x in zip(dynamic, res):
      full[k] = x
    upstream = [None] * len(outs)
    for k, x in zip(floating, g_floating):
      upstream[k] = x
    cotangents = core.backward(jax.tree_util.tree_unflatten(tree, full), upstream, specs,
                               zeros=None)  # Every floating output has its g here.
    return [cotangents[i] for i in moving]

  g_examples = [linear.shaped(outs[k]) for k in floating]
  key = _trace_key(op, params, tree, leaves, dynamic, moving, in_specs, out_specs)
  if key is None or key not in _READ:
    res_examples = [linear.shaped(leaves[k]) for k in dynamic]
    closed = jax.make_jaxpr(backward)(res_examples, g_examples)
    _check_linear(op, closed, len(dynamic), moving)
    read = [k for k, used in zip(dynamic, _used(closed.jaxpr)) if used]
    if key is not None:
      _READ[key] = read
  dynamic = _READ[key] if key is not None else read  # Only the residuals the backward reads.

  def transposed(res, t):
    try:
      (t_out,) = jax.linear_transpose(lambda g: backward(res, g), g_examples)(t)
    except AssertionError:  # JAX's transpose of a product of two terms that read g.
      raise _not_linear(op, "it multiplies g by g (or by a value computed from g)") from None
    except (NotImplementedError, TypeError) as e:
      raise _not_linear(op, f"JAX cannot transpose it: {e}"[:200]) from None
    return t_out

  t_out = iter(linear.apply(transposed, backward, [leaves[k] for k in dynamic],
                                [tangents[i] for i in moving], key))
  out_tangents = tuple(next(t_out) if spec.is_inexact
                       else np.zeros(spec.shape, jax.dtypes.float0) for spec in out_specs)
  return out_tangents[0] if single else out_tangents


def _reverse_only(core: op_core.OpCore) -> Callable[..., Any]:
  """A `jax.custom_vjp` of the op: for a backward JAX cannot transpose (host callbacks),
  declared by the op as ``unsupported_modes={"jax:jvp": reason}``."""
  @jax.custom_vjp
  def custom(*inputs):
    return core.forward(inputs).outputs

  def fwd(*inputs):
    result = core.forward(inputs)
    return result.outputs, (result.residuals, result.specs)

  def bwd(saved, upstream):
    residuals, specs = saved
    upstream = (upstream,) if specs.single else tuple(upstream)
    return core.backward(residuals, upstream, specs, lambda i: jnp.zeros(
        specs.outputs[i].shape, specs.outputs[i].dtype))

  custom.defvjp(fwd, bwd)
  return custom


def _forward_and_reverse(core: op_core.OpCore) -> Callable[..., Any]:
  """A `jax.custom_jvp` of the op whose tangent rule is the transposed backward."""
  @jax.custom_jvp
  def custom(*inputs):
    return core.forward(inputs).outputs

  def jvp(primals, tangents):
    # The outputs come from the op itself, so that a transformation around this rule
    # (the outer one in jax.hessian) differentiates them by this rule too: a surrogate
    # stays a surrogate at every order. Compiled, the two forwards are one (CSE); on
    # concrete primals (eager, op by op) no transformation is around the rule, and the
    # forward runs once.
    result = core.forward(primals)
    traced = any(isinstance(p, jax.core.Tracer) for p in primals)
    outputs = custom(*primals) if traced else result.outputs
    return outputs, _output_tangents(core, outputs, result, tangents)

  custom.defjvp(jvp, symbolic_zeros=True)
  return custom


_VALUE_READS: list[bool] = []  # Set when an op's forward asks for a JAX array's values.


def _note_value_read(x: Any):
  """A `validation` value reader that only notes the question about a JAX array
  (`_primitive`). Other arrays pass untouched: torch.compile traces this reader for a
  tensor, and a global it changed would recompile each compiled caller after every
  eager JAX call that reads values. An op body's `array_object.Array` is a JAX array."""
  if isinstance(x, (jax.Array, array_object.Array)):
    _VALUE_READS.append(True)
  return NotImplemented


validation.register_value_reader(_note_value_read)


def _primitive(core: op_core.OpCore) -> Callable[..., Any]:
  """The op's custom-derivative function, under `jax.jit` as `jax.numpy`'s own functions
  are: called eagerly (op by op, under `jax.grad` too) its forward and its backward each
  run as one compiled program instead of one dispatch per operation (what made an eager
  step up to 1.6x a hand-written `jax.custom_vjp`); inside a trace it is inlined.

  An op whose forward itself reads input values (`validation.concrete_values`) stays op
  by op, so that an eager call still sees the values and raises; the first call, made
  without the jit, tells which kind an op is. Checks declared as the op's
  ``check_values`` (center_loss's labels) run before the call instead, and keep it
  compiled."""
  reverse_only = f"{NAME}:jvp" in core.op.unsupported_modes
  custom = (_reverse_only if reverse_only else _forward_and_reverse)(core)
  jitted = jax.jit(custom)
  reads_values: list[bool] = []  # Empty until the first call has run.

  def run(*arrays):
    if reads_values:
      return (custom if reads_values[0] else jitted)(*arrays)
    _VALUE_READS.clear()
    outputs = custom(*arrays)
    reads_values.append(bool(_VALUE_READS))
    return outputs

  return run


def _kernel_guard(kernel, arrays: list, check: Callable[[list], None]) -> list:
  """`kernel_core.wrapper`'s guard: a `jax.custom_vjp` identity checking the cotangents,
  for kernels that declare no forward mode (a custom_vjp has none; JAX itself checks the
  shapes of a custom_vjp's cotangents, not their dtypes)."""
  if "jvp" not in kernel.unsupported_modes:
    return arrays

  @jax.custom_vjp
  def identity(*xs):
    return xs

  def backward(_, cotangents):
    check(list(cotangents))
    return tuple(cotangents)

  identity.defvjp(lambda *xs: (xs, None), backward)
  return list(identity(*arrays))


get = base.make_get(NAME, op_core.emitter(_CORE, _primitive),
                    kernel_core.wrapper(_CORE, _kernel_guard))


def _platform_devices(platform: str) -> list:
  try:
    return jax.devices(platform)
  except RuntimeError:  # No such platform on this machine.
    return []


def set_cpu_device_count(count: int) -> int:
  """Splits the host CPU into ``count`` devices; before JAX first runs only (then it keeps
  its count, which this returns)."""
  try:
    jax.config.update("jax_num_cpu_devices", count)
  except RuntimeError:  # Already initialised.
    return len(jax.devices("cpu"))
  return count


_CACHE_EVENTS = {"/jax/compilation_cache/cache_hits": "hits",
                 "/jax/compilation_cache/cache_misses": "misses"}
_cache_counts: dict[str, int] = {}


def enable_compile_cache(directory: str) -> None:
  """JAX's persistent compilation cache in ``directory``, every executable kept (by
  default JAX keeps only those that took a second to compile: few on a CPU)."""
  from jax.experimental.compilation_cache import compilation_cache  # pylint: disable=g-import-not-at-top
  jax.config.update("jax_compilation_cache_dir", directory)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
  compilation_cache.reset_cache()  # Takes the new directory even if JAX compiled before.
  if not _cache_counts:
    _cache_counts.update(hits=0, misses=0)
    jax.monitoring.register_event_listener(_count_cache_event)


def _count_cache_event(event: str, **unused) -> None:
  if event in _CACHE_EVENTS:
    _cache_counts[_CACHE_EVENTS[event]] += 1


def compile_cache_stats() -> dict[str, int]:
  """Persistent-cache hits and misses since `enable_compile_cache` (``{}`` before)."""
  return dict(_cache_counts)


def devices() -> list[str]:
  """Every device JAX sees, as ``platform:index`` (CPU first)."""
  return [f"{p}:{i}" for p in PLATFORMS for i, _ in enumerate(_platform_devices(p))]


def find_device(name: str):
  platform, index = name.split(":")
  return _platform_devices(platform)[int(index)]


def register_container(cls: type, flatten: Callable, unflatten: Callable) -> None:
  """Registers ``cls`` as a pytree node (once), so `jax.jit` and `jax.grad` see through it."""
  try:
    jax.tree_util.register_pytree_node(cls, flatten, unflatten)
  except ValueError:  # Already registered.
    pass
