"""Registered kernels (`crossgrad.registry.kernels`) as backends run them: the op core's
checks around an opaque callable.

A kernel's call prepares its inputs as an emitted op's does (`op_core.OpCore.prepare`:
count, the framework's arrays, the op's input checks), then calls the kernel and checks
its outputs once per signature: as many as the op's, each of the op's shape (the NumPy
reference's forward on zeros of the inputs' specs says which), floating outputs of the
inputs' dtype (`validation.check_output_dtypes`). The kernel's own differentiation rule
(its `jax.custom_vjp`, `torch.autograd.Function`, `tf.custom_gradient`) computes its
cotangents, which the cross-check compares with the reference's.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from crossgrad.backends.common import base, op_core
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.kernels import Kernel
from crossgrad.registry.opdef import OpDef
from crossgrad.registry.validation import ArraySpec


Guard = Callable[[Kernel, list, Callable[[list], None]], list]


def wrapper(adapter: op_core.Adapter,
            guard: Guard | None = None) -> Callable[[OpDef, dict, Kernel], Callable[..., Any]]:
  """A backend's ``wrap_kernel`` for `base.make_get`: the kernel's callable, checked.

  ``guard(kernel, arrays, check)``, where a backend has one, returns the differentiable
  inputs through an identity whose backward calls ``check`` on their cotangents (as the
  kernel's backward made them): `validation.check_cotangents`, the emitted op's check. It
  returns ``arrays`` unchanged where it cannot do so without taking a mode from the kernel.
  """
  def wrap(op: OpDef, params: dict, kernel: Kernel) -> Callable[..., Any]:
    core = op_core.OpCore(adapter, op, params)
    checked: dict[tuple, bool] = {}
    shapes_of = adapter.constant_at_trace(  # Of plain tuples: what a tracer takes as constants.
        lambda facts: _reference_shapes(op, params, [ArraySpec(*f) for f in facts]))

    def call(*inputs):
      arrays = core.prepare(inputs)
      if guard is not None and op.diff_argnums:
        arrays = _guarded(core, kernel, arrays, guard)
      outputs = kernel.fn(*arrays, **params)
      outs = validation.as_tuple(outputs)
      if adapter.tracing():
        _check_outputs(core, kernel, arrays, outs, shapes_of)
      else:
        key_of = adapter.key_of or adapter.spec_of
        key = (tuple(map(key_of, arrays)), tuple(map(key_of, outs)))
        if key not in checked:
          base.interned(checked, key,
                        lambda _: _check_outputs(core, kernel, arrays, outs, shapes_of), 256)
      return outputs

    call.core, call.kernel = core, kernel
    return call
  return wrap


def _guarded(core: op_core.OpCore, kernel: Kernel, arrays: list, guard: Guard) -> list:
  """``arrays`` with the differentiable ones through the backend's ``guard``."""
  op, spec_of = core.op, core.adapter.spec_of
  in_specs = tuple(map(spec_of, arrays))

  def check(cotangents: list) -> None:
    full = [None] * len(arrays)
    for i, ct in zip(op.diff_argnums, cotangents):
      full[i] = ct
    validation.check_cotangents(op, core.name, in_specs, tuple(full), spec_of)

  moved = guard(kernel, [arrays[i] for i in op.diff_argnums], check)
  arrays = list(arrays)
  for i, x in zip(op.diff_argnums, moved):
    arrays[i] = x
  return arrays


def _reference_shapes(op: OpDef, params: dict, specs: Sequence[ArraySpec]) -> list[tuple]:
  """The output shapes of the op's forward in NumPy on zeros of ``specs`` (float32 where
  NumPy has no such dtype)."""
  from crossgrad.backends import numpy as reference  # pylint: disable=g-import-not-at-top

  def zeros(spec):
    try:
      return np.zeros(spec.shape, spec.dtype)
    except TypeError:
      return np.zeros(spec.shape, np.float32)

  with np.errstate(all="ignore"):
    outputs, _ = op.forward(reference.xp, *map(zeros, specs), **params)
  return [np.shape(o) for o in validation.as_tuple(outputs)]


def _check_outputs(core: op_core.OpCore, kernel: Kernel, arrays: Sequence[Any],
                   outs: Sequence[Any], shapes_of: Callable[[tuple], list[tuple]]) -> bool:
  """Checks a kernel's outputs against the op's: their count, shapes (``shapes_of`` the
  inputs' ``(shape, dtype)``: `_reference_shapes`) and dtypes."""
  spec_of, op = core.adapter.spec_of, core.op
  in_specs, out_specs = tuple(map(spec_of, arrays)), tuple(map(spec_of, outs))
  shapes = shapes_of(tuple((spec.shape, spec.dtype) for spec in in_specs))
  where = f"kernel {kernel.name!r}"
  if len(shapes) != len(out_specs):
    raise CrossgradError("the kernel returned another number of outputs than the op",
                         op=op.name, backend=core.name, argument=where,
                         expected=len(shapes), actual=len(out_specs))
  for i, (shape, spec) in enumerate(zip(shapes, out_specs)):
    if not validation.shapes_compatible(shape, spec.shape):
      raise CrossgradError("the kernel's output has another shape than the op's",
                           op=op.name, backend=core.name, argument=f"{where} output {i}",
                           expected=str(shape), actual=str(spec))
  validation.check_output_dtypes(op, core.name, in_specs, out_specs)
  return True
