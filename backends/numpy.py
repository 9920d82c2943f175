"""The NumPy reference backend: forward values and VJPs in plain NumPy."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Sequence

import numpy as np

from crossgrad.backends import base
from crossgrad.registry import numpy_like, validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.namespace import Namespace
from crossgrad.registry.opdef import OpDef

NAME = "numpy"
VERSION = np.__version__
MODES = ("eager",)


def _one_hot(x, num_classes, /, *, dtype):
  return (np.asarray(x)[..., None] == np.arange(num_classes)).astype(dtype)


def _segment(reduce_at, fill):
  def segment(data, segment_ids, /, num_segments):
    data, ids = np.asarray(data), np.asarray(segment_ids)
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


def _clip(x, /, min=None, max=None):  # pylint: disable=redefined-builtin
  return np.clip(x, min, max)


xp = Namespace(
    NAME, np,
    extensions={
        "take": functools.partial(numpy_like.take, np, NAME),
        "segment_sum": _segment(np.add.at, lambda dtype: 0),
        "segment_min": _segment(np.minimum.at, _largest),
        "one_hot": _one_hot,
        "unbroadcast": functools.partial(numpy_like.unbroadcast, np)},
    overrides={"argsort": _argsort, "sort": _sort, "iinfo": _info(np.iinfo), "clip": _clip,
               "finfo": functools.partial(numpy_like.finfo, _info(np.finfo))})


def spec_of(x: Any) -> validation.ArraySpec:
  x = np.asarray(x)
  return validation.ArraySpec(tuple(x.shape), x.dtype.name)


def _prepare(op: OpDef, params: dict, inputs: Sequence[Any]) -> list[np.ndarray]:
  validation.check_input_count(op, NAME, inputs)
  arrays = [np.asarray(x) for x in inputs]
  validation.check_inputs(op, NAME, [spec_of(x) for x in arrays], params)
  return arrays


def _run_forward(op: OpDef, params: dict, arrays: list[np.ndarray]):
  outputs, residuals = validation.check_forward_result(
      op, NAME, op.forward(xp, *arrays, **params))
  if isinstance(outputs, (tuple, list)):
    outputs = tuple(np.asarray(o) for o in outputs)
  else:
    outputs = np.asarray(outputs)
  validation.check_output_dtypes(op, NAME, [spec_of(x) for x in arrays],
                                 [spec_of(o) for o in validation.as_tuple(outputs)])
  return outputs, residuals


def _emit(op: OpDef, params: dict) -> Callable[..., Any]:
  def forward(*inputs):
    return _run_forward(op, params, _prepare(op, params, inputs))[0]
  return forward


get = base.make_get(NAME, _emit)


def vjp(op: str | OpDef, *inputs: Any, **params: Any):
  """Like `jax.vjp` for the reference: returns ``(outputs, vjp_fn)``.

  ``vjp_fn(g)`` takes a cotangent shaped like ``outputs`` (a tuple for several
  outputs, None for integer ones) and returns one cotangent per input (None for
  non-differentiable inputs), validated like every backend's.
  """
  emitted = get(op, **params)
  opdef, resolved = emitted.op, emitted.params
  arrays = _prepare(opdef, resolved, inputs)
  outputs, residuals = _run_forward(opdef, resolved, arrays)
  single = not isinstance(outputs, tuple)
  output_specs = [spec_of(o) for o in validation.as_tuple(outputs)]
  input_specs = [spec_of(x) for x in arrays]

  def vjp_fn(g):
    upstream = validation.as_tuple(g) if not single else (g,)
    if len(upstream) != len(output_specs):
      raise CrossgradError("cotangent must mirror the outputs", op=opdef.name, backend=NAME,
                           argument="g", expected=f"{len(output_specs)} arrays",
                           actual=len(upstream))
    upstream = [None if u is None else np.asarray(u) for u in upstream]
    g = validation.cotangent_for(opdef, output_specs, upstream,
                                 lambda i: np.zeros(output_specs[i].shape,
                                                    output_specs[i].dtype), single)
    cotangents = opdef.backward(xp, residuals, g, **resolved)
    cotangents = validation.check_cotangents(
        opdef, NAME, input_specs, cotangents, spec_of)
    return tuple(None if c is None else np.asarray(c) for c in cotangents)

  return outputs, vjp_fn



def devices() -> list[str]:
  """The reference runs on the host CPU only."""
  return ["cpu:0"]


def evaluate(op: OpDef, params: dict, inputs: Sequence[np.ndarray], cotangent: Sequence[Any],
             *, device: str = "cpu:0", mode: str = "eager"):
  """Outputs (as a tuple) and input cotangents of the reference, via `vjp`."""
  base.check_mode(NAME, mode, MODES)
  if device not in devices():
    raise CrossgradError("unknown device", op=op.name, backend=NAME, argument="device",
                         expected=" or ".join(devices()), actual=repr(device))
  outputs, vjp_fn = vjp(op, *inputs, **params)
  cotangents = vjp_fn(tuple(cotangent) if isinstance(outputs, tuple) else cotangent[0])
  return validation.as_tuple(outputs), cotangents


def precision_scope(arrays: Sequence[Any], float32: str | None = None):
  """NumPy keeps every dtype as it is and computes float32 in full precision."""
  del arrays, float32
  return contextlib.nullcontext()


def register_container(cls: type, flatten: Callable, unflatten: Callable) -> None:
  """NumPy has no transformations to see through containers."""
  del cls, flatten, unflatten
