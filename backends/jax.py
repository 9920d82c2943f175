"""The JAX backend: each op becomes a `jax.custom_jvp` function written in `jax.numpy`.

Its tangent rule is the transpose of the op's backward, as a `jax_linear` primitive whose
transpose is the backward as written: `jax.jvp`, `jacfwd`, `linearize` and `hessian` work,
and reverse mode (`jax.grad`) compiles to the program a hand-written `jax.custom_vjp`
would. A surrogate gradient stays a surrogate in both directions: the forward-mode
derivative is the transpose of the backward, never the forward's own derivative.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jex

from crossgrad.backends import base, jax_linear
from crossgrad.registry import numpy_like, validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.namespace import Namespace
from crossgrad.registry.opdef import OpDef

NAME = "jax"
VERSION = jax.__version__
MODES = ("eager", "jit")
PLATFORMS = ("cpu", "gpu", "tpu")


def _one_hot(labels, depth, dtype):
  return jax.nn.one_hot(labels, depth, dtype=dtype)


def _segment_min(data, segment_ids, num_segments):
  out = jax.ops.segment_min(data, segment_ids, num_segments)
  if jnp.issubdtype(out.dtype, jnp.floating):  # Empty segments hold inf in JAX.
    out = jnp.minimum(out, jnp.finfo(out.dtype).max)
  return out


def _segment_sum(data, segment_ids, num_segments):
  return jax.ops.segment_sum(data, segment_ids, num_segments)  # Drops out-of-range ids.


xp = Namespace(NAME, numpy_like.table(jnp, one_hot=_one_hot, segment_sum=_segment_sum,
                                      segment_min=_segment_min))


def spec_of(x: Any) -> validation.ArraySpec:
  return validation.ArraySpec(tuple(np.shape(x)), jnp.dtype(x.dtype).name)


def _forward(op: OpDef, params: dict, inputs: Sequence[Any]):
  outputs, residuals = validation.check_forward_result(
      op, NAME, op.forward(xp, *inputs, **params))
  return (tuple(outputs) if isinstance(outputs, (tuple, list)) else outputs), residuals


def _is_array(x: Any) -> bool:
  return isinstance(x, (jax.Array, np.ndarray))


def _shaped(x: Any) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct(np.shape(x), x.dtype)


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


def _output_tangents(op: OpDef, params: dict, inputs, outputs, residuals, tangents):
  """The op's forward-mode derivative: the transpose of its backward applied to the input
  tangents (`jax_linear`: reverse mode transposes it back to the backward as written)."""
  outs = validation.as_tuple(outputs)
  single = not isinstance(outputs, tuple)
  in_specs = [spec_of(x) for x in inputs]
  out_specs = [spec_of(o) for o in outs]
  floating = [k for k, spec in enumerate(out_specs) if spec.is_floating]
  moving = [i for i in op.diff_argnums
            if not isinstance(tangents[i], jax.custom_derivatives.SymbolicZero)]
  leaves, tree = jax.tree_util.tree_flatten(residuals)
  dynamic = [k for k, leaf in enumerate(leaves) if _is_array(leaf)]

  def backward(res, g_floating):
    full = list(leaves)
    for k, x in zip(dynamic, res):
      full[k] = x
    g = [None] * len(outs)
    for k, x in zip(floating, g_floating):
      g[k] = x
    cotangents = op.backward(xp, jax.tree_util.tree_unflatten(tree, full),
                             g[0] if single else tuple(g), **params)
    cotangents = validation.check_cotangents(op, NAME, in_specs, cotangents, spec_of)
    return [cotangents[i] for i in moving]

  g_examples = [jax.ShapeDtypeStruct(out_specs[k].shape, out_specs[k].dtype) for k in floating]
  closed = jax.make_jaxpr(backward)([_shaped(leaves[k]) for k in dynamic], g_examples)
  _check_linear(op, closed, len(dynamic), moving)
  dynamic = [k for k, used in zip(dynamic, _used(closed.jaxpr)) if used]  # Only those read.

  def transposed(res, t):
    try:
      (t_out,) = jax.linear_transpose(lambda g: backward(res, g), g_examples)(t)
    except AssertionError:  # JAX's transpose of a product of two terms that read g.
      raise _not_linear(op, "it multiplies g by g (or by a value computed from g)") from None
    except (NotImplementedError, TypeError) as e:
      raise _not_linear(op, f"JAX cannot transpose it: {e}"[:200]) from None
    return t_out

  t_out = iter(jax_linear.apply(transposed, backward, [leaves[k] for k in dynamic],
                                [tangents[i] for i in moving]))
  result = tuple(next(t_out) if spec.is_floating else np.zeros(spec.shape, jax.dtypes.float0)
                 for spec in out_specs)
  return result[0] if single else result


def _emit(op: OpDef, params: dict) -> Callable[..., Any]:
  @jax.custom_jvp
  def core(*inputs):
    return _forward(op, params, inputs)[0]

  def jvp(primals, tangents):
    outputs, residuals = _forward(op, params, primals)
    return outputs, _output_tangents(op, params, primals, outputs, residuals, tangents)

  core.defjvp(jvp, symbolic_zeros=True)

  def call(*inputs):
    validation.check_input_count(op, NAME, inputs)
    arrays = [x if isinstance(x, jax.Array) else jnp.asarray(x) for x in inputs]
    validation.check_inputs(op, NAME, [spec_of(x) for x in arrays], params)
    return core(*arrays)

  return call


get = base.make_get(NAME, _emit)


def _platform_devices(platform: str) -> list:
  try:
    return jax.devices(platform)
  except RuntimeError:  # No such platform on this machine.
    return []


def devices() -> list[str]:
  """Every device JAX sees, as ``platform:index`` (CPU first)."""
  return [f"{p}:{i}" for p in PLATFORMS for i, _ in enumerate(_platform_devices(p))]


def find_device(name: str):
  platform, index = name.split(":")
  return _platform_devices(platform)[int(index)]


def precision_scope(arrays: Sequence[np.ndarray]):
  """Enables 64-bit types for this scope only where the arrays need them."""
  wide = any(np.asarray(a).dtype.itemsize == 8 for a in arrays if a is not None)
  return jax.enable_x64(True) if wide else contextlib.nullcontext()


def evaluate(op: OpDef, params: dict, inputs: Sequence[np.ndarray], cotangent: Sequence[Any],
             *, device: str = "cpu:0", mode: str = "jit"):
  """Outputs (as a tuple) and input cotangents, on ``device``, eagerly or under `jax.jit`."""
  base.check_mode(NAME, mode, MODES)
  validation.check_input_count(op, NAME, inputs)
  fn = get(op, **params)
  diff = op.diff_argnums

  def run(diff_args, all_args, cots):
    def f(*d):
      args = list(all_args)
      for i, x in zip(diff, d):
        args[i] = x
      return fn(*args)

    outputs, vjp_fn = jax.vjp(f, *diff_args)
    outs = validation.as_tuple(outputs)
    full = tuple(c if c is not None else np.zeros(o.shape, jax.dtypes.float0)
                 for o, c in zip(outs, cots))
    grads = vjp_fn(full if isinstance(outputs, tuple) else full[0])
    return outs, grads

  if mode == "jit":
    run = jax.jit(run)
  target = find_device(device)
  with precision_scope(list(inputs) + list(cotangent)), jax.default_device(target):
    args = [jax.device_put(x, target) for x in inputs]
    cots = [None if c is None else jax.device_put(c, target) for c in cotangent]
    outs, grads = run([args[i] for i in diff], args, cots)
    outs, grads = jax.device_get((outs, grads))
  return tuple(np.asarray(o) for o in outs), base.merge_cotangents(op, grads)



def register_container(cls: type, flatten: Callable, unflatten: Callable) -> None:
  """Registers ``cls`` as a pytree node (once), so `jax.jit` and `jax.grad` see through it."""
  try:
    jax.tree_util.register_pytree_node(cls, flatten, unflatten)
  except ValueError:  # Already registered.
    pass
