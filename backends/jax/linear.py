"""A JAX primitive for a linear map that comes with its own transpose.

`apply(fn, fn_transpose, residuals, linear)` evaluates ``fn(residuals, linear)``, a map
linear in ``linear``; JAX transposes it by calling ``fn_transpose(residuals, cotangents)``
instead of transposing ``fn``'s operations one by one. The JAX backend's forward-mode
rule (`jax.custom_jvp`) computes an op's output tangent with it: ``fn`` is the transpose
of the op's backward (`jax.linear_transpose`) and ``fn_transpose`` the backward itself, so
reverse mode (JVP, linearize, transpose) runs the backward exactly as written, the same
program a hand-written `jax.custom_vjp` compiles to, where transposing the transposed
backward op by op would compile to a different (for gathers, a slower) one.

Unlike `jax.custom_derivatives.linear_call`, the primitive also differentiates in its
residuals (second order: the backward's derivative) and batches (`jax.vmap`): both
functions are traced to jaxprs, and each rule builds the jaxprs it needs from them.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Hashable, Sequence

import jax
from jax.extend import core
from jax.interpreters import ad, batching, mlir

transposable_p = core.Primitive("crossgrad_transposable")
transposable_p.multiple_results = True
_TRACED: dict[Hashable, tuple] = {}  # apply()'s key -> (callee jaxpr, transpose thunk).


def _trace(fn: Callable[..., Any], avals: Sequence[Any]) -> core.ClosedJaxpr:
  return jax.make_jaxpr(fn)(*avals)


def shaped(x: Any) -> jax.ShapeDtypeStruct:
  """Shape and dtype; inside `shard_map` also the mesh axes ``x`` varies over, which the
  outputs traced from it (the tangents the primitive returns) must carry."""
  aval = jax.typeof(x)
  mat = getattr(aval, "manual_axis_type", None)
  if not getattr(mat, "varying", None):
    return jax.ShapeDtypeStruct(x.shape, x.dtype)
  return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=aval.sharding, manual_axis_type=mat)


def apply(fn: Callable[[list, list], list], fn_transpose: Callable[[list, list], list],
          residuals: Sequence[Any], linear: Sequence[Any], key: Hashable = None) -> list:
  """``fn(residuals, linear)`` (lists of arrays in, a list out), transposed by
  ``fn_transpose(residuals, cotangents)``.

  With a ``key`` naming the two functions (up to the arrays' shapes and dtypes, which are
  added to it), their jaxprs are traced once and reused by later calls with that key, so
  eager calls also reuse their compiled evaluation.
  """
  residuals, linear = list(residuals), list(linear)
  avals = [shaped(x) for x in residuals + linear]
  if key is not None:
    key = (key, tuple((a.shape, a.dtype, a.sharding) for a in avals), len(residuals))
    if key in _TRACED:
      return _bind(residuals, linear, *_TRACED[key])
  n = len(residuals)
  callee = _trace(lambda *a: list(fn(list(a[:n]), list(a[n:]))), avals)
  res_avals = callee.in_avals[:n]

  def transpose():
    return _trace(lambda *a: list(fn_transpose(list(a[:n]), list(a[n:]))),
                  list(res_avals) + list(callee.out_avals))

  traced = (callee, _memoize(transpose))
  if key is not None:
    _TRACED[key] = traced
  return _bind(residuals, linear, *traced)


def _memoize(thunk: Callable[[], Any]) -> Callable[[], Any]:
  cache = []

  def memoized():
    if not cache:
      cache.append(thunk())
    return cache[0]

  return memoized


def _bind(residuals, linear, callee, transpose):
  return transposable_p.bind(*residuals, *linear, callee=callee, transpose=transpose,
                             num_res=len(residuals))


def _evaluate(*args, callee, transpose, num_res):
  del transpose, num_res
  return core.jaxpr_as_fun(callee)(*args)


@functools.lru_cache(maxsize=512)
def _compiled(callee: core.ClosedJaxpr) -> Callable[..., Any]:
  return jax.jit(core.jaxpr_as_fun(callee))


def _impl(*args, callee, transpose, num_res):
  """Evaluated outside a trace (eager): one compiled call, not one per equation."""
  del transpose, num_res
  return _compiled(callee)(*args)


@functools.lru_cache(maxsize=512)
def _by_residuals(callee: core.ClosedJaxpr, moving: tuple[int, ...]) -> Callable[..., Any]:
  """The derivative of ``callee`` in its residuals at ``moving``, the linear inputs fixed."""
  def jvp(residuals, linear, dots):
    def of_moving(*moved):
      args = list(residuals)
      for i, x in zip(moving, moved):
        args[i] = x
      return core.jaxpr_as_fun(callee)(*args, *linear)
    return jax.jvp(of_moving, [residuals[i] for i in moving], list(dots))[1]
  return jax.jit(jvp)


def _abstract_eval(*args, callee, transpose, num_res):
  del args, transpose, num_res
  return callee.out_avals


def _jvp(primals, tangents, *, callee, transpose, num_res):
  """Linear in the linear inputs (the same primitive); in the residuals, the ordinary
  derivative of ``fn`` (second order)."""
  residuals, linear = primals[:num_res], primals[num_res:]
  res_dots, lin_dots = tangents[:num_res], tangents[num_res:]
  out = _bind(residuals, linear, callee, transpose)
  lin_dots = [ad.instantiate_zeros(t) for t in lin_dots]
  dots = _bind(residuals, lin_dots, callee, transpose)
  moving = tuple(i for i, t in enumerate(res_dots) if type(t) is not ad.Zero)
  if moving:
    by_res = _by_residuals(callee, moving)(list(residuals), list(linear),
                                           [res_dots[i] for i in moving])
    dots = [a + b for a, b in zip(dots, by_res)]
  return out, dots


def _transpose(cts, *args, callee, transpose, num_res):
  residuals, linear = args[:num_res], args[num_res:]
  if any(ad.is_undefined_primal(x) for x in residuals):
    raise NotImplementedError("crossgrad_transposable is not linear in its residuals")
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  back = _bind(list(residuals), cts, transpose(), lambda: callee)
  return [None] * num_res + [b if ad.is_undefined_primal(x) else None
                             for x, b in zip(linear, back)]


def _batch(args, dims, *, callee, transpose, num_res):
  """Every argument batched along axis 0 (unbatched ones broadcast), both maps vmapped."""
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  args = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  batched = _trace(jax.vmap(core.jaxpr_as_fun(callee)), [shaped(x) for x in args])

  def batched_transpose():
    fn_t = transpose()
    return _trace(jax.vmap(core.jaxpr_as_fun(fn_t)),
                  list(batched.in_avals[:num_res]) + list(batched.out_avals))

  out = _bind(args[:num_res], args[num_res:], batched, _memoize(batched_transpose))
  return out, [0] * len(out)


transposable_p.def_impl(_impl)
transposable_p.def_abstract_eval(_abstract_eval)
ad.primitive_jvps[transposable_p] = _jvp
ad.primitive_transposes[transposable_p] = _transpose
batching.primitive_batchers[transposable_p] = _batch
mlir.register_lowering(transposable_p, mlir.lower_fun(_evaluate, multiple_results=True))
