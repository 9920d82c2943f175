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

from typing import Any, Callable, Sequence

import jax
from jax.extend import core
from jax.interpreters import ad, batching, mlir

transposable_p = core.Primitive("crossgrad_transposable")
transposable_p.multiple_results = True


def _trace(fn: Callable[..., Any], avals: Sequence[Any]) -> core.ClosedJaxpr:
  return jax.make_jaxpr(fn)(*avals)


def _shaped(x: Any) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct(x.shape, x.dtype)


def apply(fn: Callable[[list, list], list], fn_transpose: Callable[[list, list], list],
          residuals: Sequence[Any], linear: Sequence[Any]) -> list:
  """``fn(residuals, linear)`` (lists of arrays in, a list out), transposed by
  ``fn_transpose(residuals, cotangents)``."""
  residuals, linear = list(residuals), list(linear)
  n = len(residuals)
  callee = _trace(lambda *a: list(fn(list(a[:n]), list(a[n:]))),
                  [_shaped(x) for x in residuals + linear])
  res_avals = callee.in_avals[:n]

  def transpose():
    return _trace(lambda *a: list(fn_transpose(list(a[:n]), list(a[n:]))),
                  list(res_avals) + list(callee.out_avals))

  return _bind(residuals, linear, callee, _memoize(transpose))


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


def _impl(*args, callee, transpose, num_res):
  del transpose, num_res
  return core.jaxpr_as_fun(callee)(*args)


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
  moving = [i for i, t in enumerate(res_dots) if type(t) is not ad.Zero]
  if moving:
    def of_moving(*moved):
      args = list(residuals)
      for i, x in zip(moving, moved):
        args[i] = x
      return core.jaxpr_as_fun(callee)(*args, *linear)

    _, by_res = jax.jvp(of_moving, [residuals[i] for i in moving],
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
  batched = _trace(jax.vmap(core.jaxpr_as_fun(callee)), [_shaped(x) for x in args])

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
mlir.register_lowering(transposable_p, mlir.lower_fun(_impl, multiple_results=True))
