"""The NumPy reference backend: forward values and VJPs in plain NumPy (what the checker
drives is `harness`)."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from crossgrad.backends.common import base, op_core
from crossgrad.registry import namespace, numpy_like, validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.namespace import Namespace
from crossgrad.registry.opdef import OpDef

NAME = "numpy"
VERSION = np.__version__
MODES = ("eager",)


def _one_hot(x, num_classes, /, *, dtype):
  return (np.asarray(x)[..., None] == np.arange(num_classes)).astype(dtype)


def _segment(name, reduce_at, fill):
  def segment(data, segment_ids, /, num_segments):
    data, ids = np.asarray(data), np.asarray(segment_ids)
    namespace.check_segment_ids(NAME, name, data.shape, ids.shape)
    out = np.full((num_segments,) + data.shape[1:], fill(data.dtype), data.dtype)
    keep = (ids >= 0) & (ids < num_segments)
    reduce_at(out, ids[keep], data[keep])
    return out
  return segment


def _largest(dtype):
  return np.finfo(dtype).max if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).max


# Where NumPy's own functions depart from the standard (array-api-tests 2024.12): `sort` and
# `argsort` lack `descending`, `finfo` and `iinfo` refuse arrays (and `finfo` gives NumPy
# scalars, not Python floats), `clip` calls its bounds
# `a_min`/`a_max`. (array_api_compat.numpy fixes these too, but importing it loads
# numpy.testing and numpy.f2py: it would double the time of `import crossgrad`.)
def _argsort(x, /, *, axis=-1, descending=False, stable=True):
  kind = "stable" if stable else None
  if not descending:
    return np.argsort(x, axis=axis, kind=kind)
  # Sorting the reversed array keeps equal elements in their original order.
  flipped = np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, kind=kind), axis=axis)
  return x.shape[axis] - 1 - flipped


def _sort(x, /, *, axis=-1, descending=False, stable=True):
  if descending:
    return np.take_along_axis(x, _argsort(x, axis=axis, descending=True, stable=stable),
                              axis=axis)
  return np.sort(x, axis=axis, kind="stable" if stable else None)


def _info(numpy_info):
  def info(type_, /):
    return numpy_info(type_.dtype if isinstance(type_, np.ndarray) else type_)
  return info


_ERF = np.frompyfunc(math.erf, 1, 1)  # NumPy has no erf; math.erf is correctly rounded.


def _erf(x, /):
  x = np.asarray(x)
  return np.asarray(_ERF(x), np.float64).astype(x.dtype)


def _clip(x, /, min=None, max=None):  # pylint: disable=redefined-builtin
  return np.clip(x, min, max)


xp = Namespace(
    NAME, np,
    extensions={
        "take": functools.partial(numpy_like.take, np, NAME),
        "segment_sum": _segment("segment_sum", np.add.at, lambda dtype: 0),
        "segment_min": _segment("segment_min", np.minimum.at, _largest),
        "one_hot": _one_hot,
        "unbroadcast": functools.partial(numpy_like.unbroadcast, np), "erf": _erf},
    overrides={"argsort": _argsort, "sort": _sort, "iinfo": _info(np.iinfo), "clip": _clip,
               "finfo": functools.partial(numpy_like.finfo, _info(np.finfo))})


def spec_of(x: Any) -> validation.ArraySpec:
  x = np.asarray(x)
  return validation.ArraySpec(tuple(x.shape), x.dtype.name)


_CORE = op_core.Adapter(NAME, xp, spec_of, as_output=np.asarray,
                        to_arrays=lambda inputs: [np.asarray(x) for x in inputs])


def _primitive(core: op_core.OpCore) -> Callable[..., Any]:
  return lambda *arrays: core.forward(arrays).outputs  # No gradient machinery: see `vjp`.


get = base.make_get(NAME, op_core.emitter(_CORE, _primitive))


COMPUTE_DTYPES = {"bfloat16": np.float32}  # What the reference computes these dtypes in.


def _is_bfloat16(x: Any) -> bool:
  return isinstance(x, np.ndarray) and x.dtype.name in COMPUTE_DTYPES


def _computed_wider(fn: Callable[..., Any]) -> Callable[..., Any]:
  """``vjp`` for bfloat16 inputs: NumPy has no bfloat16 arithmetic of its own (ml_dtypes
  stores it; mixing it with Python numbers gives float32), so the reference computes in
  float32 and rounds each output and cotangent to bfloat16 once: the result of a framework
  that keeps bfloat16 arrays and accumulates in float32 (docs/dtypes.md). An output whose
  dtype a static ``dtype`` parameter chooses (float32 from bfloat16 inputs: declared mixed
  precision) keeps it."""
  @functools.wraps(fn)
  def vjp_of(op, *inputs, **params):
    low = [_is_bfloat16(x) for x in inputs]
    if not any(low):
      return fn(op, *inputs, **params)
    narrow = inputs[low.index(True)].dtype
    wide = COMPUTE_DTYPES[narrow.name]
    outputs, vjp_fn = fn(op, *(x.astype(wide) if b else x for x, b in zip(inputs, low)),
                         **params)
    chosen = get(op, **params).params.get("dtype")  # It chooses the outputs' dtype: kept.
    rounded_out = lambda x: x.astype(narrow) if x.dtype == wide and chosen != x.dtype else x
    rounded = lambda x: x.astype(narrow) if x is not None and x.dtype == wide else x

    def rounded_vjp(g):
      g = tuple(None if u is None else np.asarray(u).astype(wide) if _is_bfloat16(np.asarray(u))
                else u for u in validation.as_tuple(g))
      cts = vjp_fn(g if isinstance(outputs, tuple) else g[0])
      return tuple(rounded(c) if b else c for c, b in zip(cts, low))

    if isinstance(outputs, tuple):
      return tuple(rounded_out(o) for o in outputs), rounded_vjp
    return rounded_out(outputs), rounded_vjp
  return vjp_of


@_computed_wider
def vjp(op: str | OpDef, *inputs: Any, **params: Any):
  """Like `jax.vjp` for the reference: returns ``(outputs, vjp_fn)``.

  ``vjp_fn(g)`` takes a cotangent shaped like ``outputs`` (a tuple for several
  outputs, None for integer ones) and returns one cotangent per input (None for
  non-differentiable inputs), validated like every backend's. bfloat16 is computed in
  float32 and rounded (`_computed_wider`); complex ops follow JAX's convention, as their
  backward is written.
  """
  core = get(op, **params).core
  result = core.forward(core.prepare(inputs))
  specs = result.specs

  def vjp_fn(g):
    upstream = (g,) if specs.single else validation.as_tuple(g)
    if len(upstream) != len(specs.outputs):
      raise CrossgradError("cotangent must mirror the outputs", op=core.op.name, backend=NAME,
                           argument="g", expected=f"{len(specs.outputs)} arrays",
                           actual=len(upstream))
    upstream = [None if u is None else np.asarray(u) for u in upstream]
    cotangents = core.backward(
        result.residuals, upstream, specs,
        lambda i: np.zeros(specs.outputs[i].shape, specs.outputs[i].dtype))
    return tuple(None if c is None else np.asarray(c) for c in cotangents)

  return result.outputs, vjp_fn


def devices() -> list[str]:
  """The reference runs on the host CPU only."""
  return ["cpu:0"]


def register_container(cls: type, flatten: Callable, unflatten: Callable) -> None:
  """NumPy has no transformations to see through containers."""
  del cls, flatten, unflatten
