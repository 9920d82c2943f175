"""JAX halves of ports that cannot be native: host callbacks and `jax2tf.call_tf`, each
with `vmap` where JAX allows it and a `CrossgradError` (naming the op and what is
missing) where a derivative of host code would be needed."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax

from crossgrad.backends.jax import array_object as jax_array_object
from crossgrad.registry.errors import CrossgradError


def _no_derivative(name: str, what: str, hint: str) -> Callable[..., Any]:
  def jvp(primals, tangents):
    del primals, tangents
    raise CrossgradError(
        f"second derivatives (and jax.jvp) need the derivative of {what}, which JAX "
        "cannot differentiate", op=name, backend="jax", argument="jvp", hint=hint)
  return jvp


def host_call(name: str, what: str, fn: Callable[..., Any],
              structs: Sequence[jax.ShapeDtypeStruct], *args: Any, hint: str) -> list[Any]:
  """``fn(*args)`` on the host (`jax.pure_callback`): `jit` and `vmap` (one call per
  example) work; differentiating it raises a `CrossgradError`."""
  @jax.custom_jvp
  def call(*a):
    return jax.pure_callback(fn, list(structs), *a, vmap_method="sequential")

  call.defjvp(_no_derivative(name, what, hint))
  return list(call(*jax_array_object.unwrap(args)))


def tf_call(name: str, what: str, fn: Callable[..., Any], hint: str,
            structs: Sequence[jax.ShapeDtypeStruct] | None = None) -> Callable[..., Any]:
  """TF ``fn`` through `jax2tf.call_tf` (compiled with XLA under `jax.jit`), batched
  one example at a time under `vmap`, with outputs of ``structs`` where given;
  differentiating it, or TF code XLA cannot compile, raises a `CrossgradError`."""
  from jax.experimental import jax2tf  # pylint: disable=g-import-not-at-top
  batched = jax.custom_batching.sequential_vmap(jax2tf.call_tf(
      fn, output_shape_dtype=None if structs is None else tuple(structs)))
  call = jax.custom_jvp(lambda *a: batched(*a))
  call.defjvp(_no_derivative(name, what, hint))

  def run(*args):
    try:
      return call(*jax_array_object.unwrap(args))
    except CrossgradError:
      raise
    except Exception as e:  # pylint: disable=broad-except  # TF's or XLA's, named here.
      lines = [line for line in str(e).splitlines() if "Detected unsupported" in line]
      raise CrossgradError(f"jax2tf.call_tf cannot run {what}", op=name, backend="jax",
                           argument="call_tf", actual=(lines or [str(e)])[0][:400],
                           hint=hint) from e

  return run
