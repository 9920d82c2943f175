"""What the checker drives in JAX (`protocol.Backend`, `protocol.HigherOrder`): the op run on
NumPy inputs eagerly, under `jax.jit` or through a `jax.export` round trip, its forward mode,
second order and transformations, and the precision they run in.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import jax
import numpy as np

from crossgrad.backends.common import base, op_core, scaled_rules
from crossgrad.backends.jax import export
from crossgrad.backends.jax.emitter import MODES, NAME, find_device, get
from crossgrad.registry import validation
from crossgrad.registry.opdef import OpDef

EXTRA_MODES = ("export",)  # Run when asked for: a jax.export round trip.
UNSUPPORTED_CHECKS = {("jvp", "export"): "jax.export serialises reverse-mode derivatives "
                                         "(vjp_order), not forward mode"}
TRANSFORMS = ("vmap", "scan", "checkpoint", "batched_vjp")
# Without x64 (JAX's default, and crossgrad's outside 64-bit inputs: `precision_scope`) JAX
# makes 64-bit integers 32-bit: the cross-check compares such outputs by value.
NARROWED_INTEGERS = True
_WIDE = ("float64", "int64", "uint64", "complex128")  # JAX makes these 32-bit without x64.


@contextlib.contextmanager
def precision_scope(arrays: Sequence[np.ndarray], float32: str | None = None):
  """Enables 64-bit types for this scope only where the arrays need them; with
  ``float32="highest"``, ``jax.default_matmul_precision("highest")`` too (JAX's default
  uses TF32 or bfloat16 passes for float32 matmuls on recent GPUs)."""
  wide = any(np.asarray(a).dtype.name in _WIDE for a in arrays if a is not None)
  with contextlib.ExitStack() as stack:
    if wide:
      stack.enter_context(jax.enable_x64(True))
    if float32 == "highest":
      stack.enter_context(jax.default_matmul_precision("highest"))
    yield


def _function(op: OpDef, params: dict, inputs: Sequence[np.ndarray], mode: str):
  """The op's function in ``mode``: the emitted op, or its `jax.export` round trip."""
  fn = get(op, **params)
  return export.round_trip(fn, inputs) if mode == "export" else fn


def _key(op: OpDef, params: dict, mode: str, *what: Any) -> tuple | None:
  """The `base.compiled` key of a runner; None (build each time) for an export round trip,
  whose function is new on every call."""
  return None if mode == "export" else (get(op, **params), mode, *what)


def _run_on(device: str, arrays: Any, make_run: Callable[[], Callable[..., Any]], jit: bool,
            key: tuple | None = None):
  """``make_run()(*arrays)`` on ``device`` (64-bit where the arrays need it), as NumPy; a
  jitted runner with a ``key`` (emitted function, mode, what it runs) is made once
  (`base.compiled`), so running it again on same-shaped arrays compiles nothing."""
  target = find_device(device)
  with precision_scope(jax.tree.leaves(arrays)), jax.default_device(target):
    if jit and key is not None:
      run = base.compiled(key + (device,), lambda: jax.jit(make_run()))
    else:
      run = jax.jit(make_run()) if jit else make_run()
    out = run(*jax.device_put(arrays, target))
    return jax.tree.map(np.asarray, jax.device_get(out))


def _pullback(f: Callable[..., Any], diff_args: Sequence[Any]):
  """Outputs (a tuple) and the function taking output cotangents (None: zero) to the
  cotangents of ``diff_args``."""
  outputs, vjp_fn = jax.vjp(f, *diff_args)
  outs = validation.as_tuple(outputs)

  def pull(cots):
    full = tuple(c if c is not None else np.zeros(o.shape, jax.dtypes.float0)
                 for o, c in zip(outs, cots))
    return vjp_fn(full if isinstance(outputs, tuple) else full[0])
  return outs, pull


def _vjp(f: Callable[..., Any], diff_args: Sequence[Any], cots: Sequence[Any]):
  """Outputs (a tuple) and the cotangents of ``diff_args`` for output cotangents ``cots``."""
  outs, pull = _pullback(f, diff_args)
  return outs, pull(cots)


def evaluate(op: OpDef, params: dict, inputs: Sequence[np.ndarray], cotangent: Sequence[Any],
             *, device: str = "cpu:0", mode: str = "jit"):
  """Outputs (as a tuple) and input cotangents, on ``device``, eagerly, under `jax.jit`, or
  through a `jax.export` round trip (``mode="export"``)."""
  op_core.check_run(NAME, op, mode, MODES + EXTRA_MODES, inputs)
  diff = op.diff_argnums

  def make_run():
    fn = _function(op, params, inputs, mode)
    return lambda args, cots: _vjp(base.of_diff(fn, diff, args), [args[i] for i in diff], cots)

  outs, grads = _run_on(device, (list(inputs), list(cotangent)), make_run, mode != "eager",
                        _key(op, params, mode))
  return tuple(outs), base.merge_cotangents(op, grads)


def evaluate_higher_order(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                          cotangent: Sequence[Any], tangents: Sequence[Any] | None,
                          direction: Sequence[Any] | None, *, device: str = "cpu:0",
                          mode: str = "jit"):
  """In one program: the output tangents (`jax.jvp`) for input ``tangents``, and the
  gradient of <vjp(cotangent), direction> with respect to each input (`jax.vjp` of
  `jax.vjp`: the backward differentiated); None for integer outputs, inputs without a
  gradient, and what is not asked for (``tangents`` or ``direction`` None)."""
  op_core.check_run(NAME, op, mode, MODES + EXTRA_MODES, inputs)
  diff = op.diff_argnums

  def make_run():
    fn = _function(op, params, inputs, mode)

    def run(args, cots, tans, dirs):
      out_tangents = second = None
      if tans is not None:
        out_tangents = validation.as_tuple(jax.jvp(
            base.of_diff(fn, diff, args), [args[i] for i in diff], [tans[i] for i in diff])[1])
      if dirs is not None:  # The gradient of <vjp, direction>: the vjp of the vjp.
        _, pullback = jax.vjp(lambda *moved: _vjp(base.of_diff(fn, diff, args), moved, cots)[1],
                              *[args[i] for i in diff])
        second = pullback(tuple(dirs[i] for i in diff))
      return out_tangents, second
    return run

  arrays = (list(inputs), list(cotangent), None if tangents is None else list(tangents),
            None if direction is None else list(direction))
  out_tangents, second = _run_on(device, arrays, make_run, mode != "eager",
                                 _key(op, params, mode, "higher_order"))
  return (None if out_tangents is None else
          tuple(None if t.dtype == jax.dtypes.float0 else t for t in out_tangents),
          None if second is None else base.merge_cotangents(op, second))


def evaluate_transformed(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                         cotangent: Sequence[Any], *, device: str = "cpu:0",
                         transforms: Sequence[str] = TRANSFORMS,
                         cotangents: Sequence[Any] | None = None):
  """Outputs and input cotangents of a batch (axis 0 of every array) in each of
  ``transforms``, all in one `jax.jit` program: ``vmap`` of the per-example VJP, a
  `jax.lax.scan` over the batch, and (vmapped) the per-example VJP of the op under
  `jax.checkpoint`, rematerialised in the backward; ``batched_vjp``: at the batch's first
  example, its outputs and `jax.vmap` of its one VJP function over ``cotangents`` (output
  cotangents stacked on axis 0; ``cotangent`` where None)."""
  for transform in transforms:
    base.check_mode(NAME, transform, TRANSFORMS)
  validation.check_input_count(op, NAME, inputs)
  diff = op.diff_argnums
  many = (list(cotangent if cotangents is None else cotangents)
          if "batched_vjp" in transforms else None)

  def make_run():
    fn = get(op, **params)

    def example(args, cots, wrap=lambda f: f):
      outs, cts = _vjp(wrap(base.of_diff(fn, diff, args)), [args[i] for i in diff], cots)
      return outs, base.merge_cotangents(op, cts)

    def batched_vjp(args, many):
      first = [a[0] for a in args]
      outs, pull = _pullback(base.of_diff(fn, diff, first), [first[i] for i in diff])
      return outs, jax.vmap(lambda cots: base.merge_cotangents(op, pull(cots)))(many)

    run = {"vmap": lambda args, cots, _: jax.vmap(example)(args, cots),
           "scan": lambda args, cots, _: jax.lax.scan(
               lambda carry, xs: (carry, example(*xs)), None, (args, cots))[1],
           "checkpoint": lambda args, cots, _: jax.vmap(
               lambda args, cots: example(args, cots, jax.checkpoint))(args, cots),
           "batched_vjp": lambda args, _, many: batched_vjp(args, many)}
    return lambda args, cots, many: {t: run[t](args, cots, many) for t in transforms}

  results = _run_on(device, (list(inputs), list(cotangent), many), make_run, True,
                    _key(op, params, "jit", tuple(transforms)))
  return {t: (tuple(results[t][0]), tuple(results[t][1])) for t in transforms}


def scaled_kernel(fn: Callable[..., Any], factor: float) -> Callable[..., Any] | None:
  """``fn`` (a kernel) with its `jax.custom_vjp` or `jax.custom_jvp` rule giving ``factor``
  times its cotangents (tangents), where ``fn`` is one or its closure or globals hold one
  (`scaled_rules`); None where it reaches none."""
  return scaled_rules.scaled_kernel(fn, _is_rule, lambda rule: _scaled_rule(rule, factor))


def _is_rule(value: Any) -> bool:
  return (isinstance(value, jax.custom_vjp) and getattr(value, "bwd", None) is not None
          or isinstance(value, jax.custom_jvp) and getattr(value, "jvp", None) is not None)


def _times(factor: float, tree: Any) -> Any:
  """``tree`` with each inexact array times ``factor`` (integer, float0 and None kept)."""
  def scale(x):
    inexact = jax.numpy.issubdtype(jax.numpy.result_type(x), jax.numpy.inexact)
    return x * factor if inexact else x
  return jax.tree.map(scale, tree)


def _scaled_rule(rule: Any, factor: float) -> Any:
  """A copy of ``rule`` (a `jax.custom_vjp` or `jax.custom_jvp`) whose backward returns
  ``factor`` times its cotangents (whose tangent rule ``factor`` times its tangents)."""
  if isinstance(rule, jax.custom_vjp):
    scaled = jax.custom_vjp(rule.fun, nondiff_argnums=rule.nondiff_argnums)
    bwd = rule.bwd
    scaled.defvjp(rule.fwd, lambda *args: _times(factor, bwd(*args)),
                  symbolic_zeros=rule.symbolic_zeros, optimize_remat=rule.optimize_remat)
    return scaled
  scaled = jax.custom_jvp(rule.fun, nondiff_argnums=rule.nondiff_argnums)
  jvp = rule.jvp

  def scaled_jvp(*args):
    outputs, tangents = jvp(*args)
    return outputs, _times(factor, tangents)
  scaled.defjvp(scaled_jvp, symbolic_zeros=getattr(rule, "symbolic_zeros", False))
  return scaled
