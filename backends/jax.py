"""The JAX backend: each op becomes a `jax.custom_vjp` function written in `jax.numpy`."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from crossgrad.backends import base, jax_array_api
from crossgrad.registry import numpy_like, validation
from crossgrad.registry.namespace import Namespace
from crossgrad.registry.opdef import OpDef

NAME = "jax"
VERSION = jax.__version__
MODES = ("eager", "jit")
PLATFORMS = ("cpu", "gpu", "tpu")


def _one_hot(x, num_classes, /, *, dtype):
  return jax.nn.one_hot(x, num_classes, dtype=dtype)


def _segment_min(data, segment_ids, /, num_segments):
  out = jax.ops.segment_min(data, segment_ids, num_segments)
  if jnp.issubdtype(out.dtype, jnp.floating):  # Empty segments hold inf in JAX.
    out = jnp.minimum(out, jnp.finfo(out.dtype).max)
  return out


def _segment_sum(data, segment_ids, /, num_segments):
  return jax.ops.segment_sum(data, segment_ids, num_segments)  # Drops out-of-range ids.


xp = Namespace(NAME, jnp, extensions={
    "take": functools.partial(numpy_like.take, jnp, NAME), "segment_sum": _segment_sum,
    "segment_min": _segment_min, "one_hot": _one_hot,
    "unbroadcast": functools.partial(numpy_like.unbroadcast, jnp)},
    overrides=jax_array_api.FIXES)  # Where jax.numpy departs from the standard.


def spec_of(x: Any) -> validation.ArraySpec:
  return validation.ArraySpec(tuple(np.shape(x)), jnp.dtype(x.dtype).name)


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True)
class _Specs:
  """Static facts the backward pass validates against (carried as pytree aux data)."""

  inputs: tuple[validation.ArraySpec, ...]
  outputs: tuple[validation.ArraySpec, ...]
  single: bool


def _forward(op: OpDef, params: dict, inputs: Sequence[Any]):
  outputs, residuals = validation.check_forward_result(
      op, NAME, op.forward(xp, *inputs, **params))
  validation.check_output_dtypes(op, NAME, [spec_of(x) for x in inputs],
                                 [spec_of(o) for o in validation.as_tuple(outputs)])
  return (tuple(outputs) if isinstance(outputs, (tuple, list)) else outputs), residuals


def _emit(op: OpDef, params: dict) -> Callable[..., Any]:
  @jax.custom_vjp
  def core(*inputs):
    return _forward(op, params, inputs)[0]

  def fwd(*inputs):
    outputs, residuals = _forward(op, params, inputs)
    specs = _Specs(tuple(spec_of(x) for x in inputs),
                   tuple(spec_of(o) for o in validation.as_tuple(outputs)),
                   not isinstance(outputs, tuple))
    return outputs, (residuals, specs)

  def bwd(saved, upstream):
    residuals, specs = saved
    upstream = (upstream,) if specs.single else tuple(upstream)
    g = validation.cotangent_for(
        op, specs.outputs, upstream,
        lambda i: jnp.zeros(specs.outputs[i].shape, specs.outputs[i].dtype), specs.single)
    cotangents = op.backward(xp, residuals, g, **params)
    return validation.check_cotangents(op, NAME, specs.inputs, cotangents, spec_of)

  core.defvjp(fwd, bwd)

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
    run = base.compiled((fn, mode, device), lambda: jax.jit(run))
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
