"""Hand-written implementations of registered ops ("kernels"), kept beside their definitions.

A kernel is an opaque callable of one backend's arrays (a Pallas kernel under
`jax.custom_vjp`, a Triton kernel under a `torch.autograd.Function`, a fused op under
`tf.custom_gradient`): the registry only stores it by (op, backend, name); backends wrap it
in the op core's checks (`crossgrad.backends.common.base.make_get`) and the cross-check checks it
against the op's definition like the emitted op (docs/kernels.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from crossgrad.registry import op_registry
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

EMITTED = "emitted"  # The ``impl`` of the op crossgrad emits itself.


@dataclasses.dataclass(frozen=True, eq=False)
class Kernel:
  """One registered kernel.

  Attributes:
    op: the op's name.
    backend: the backend whose arrays it takes ("jax", "torch", "tensorflow", ...).
    fn: ``fn(*inputs, **params) -> outputs``, differentiable in that framework.
    name: how ``impl=`` and the cross-check's rows name it.
    unsupported_modes: ``{mode: reason}`` for modes and checks it cannot run in (``"vmap"``,
      ``"jvp"``, ``"second_order"``, ``"compile"``...): the cross-check reports them as
      ``skipped`` with the reason.
  """

  op: str
  backend: str
  fn: Callable[..., Any]
  name: str
  unsupported_modes: Mapping[str, str]


_KERNELS: dict[tuple[str, str], dict[str, Kernel]] = {}  # By (op, backend), in order.


def _op_name(op: str | OpDef) -> str:
  return op.name if isinstance(op, OpDef) else op_registry.get(op).name


def register_kernel(op: str | OpDef, backend: str, fn: Callable[..., Any], *, name: str,
                    unsupported_modes: Mapping[str, str] | None = None) -> Kernel:
  """Registers ``fn`` as backend ``backend``'s implementation ``name`` of ``op``; the last
  one registered for a backend is what its ``get(op)`` returns. Registering a name again
  replaces that kernel (and makes it the last)."""
  op_name = _op_name(op)
  if not callable(fn):
    raise CrossgradError("a kernel must be callable", op=op_name, backend=backend,
                         argument="fn", expected="a function of the backend's arrays",
                         actual=type(fn).__name__)
  if not isinstance(name, str) or not name or name == EMITTED:
    raise CrossgradError("bad kernel name", op=op_name, backend=backend, argument="name",
                         expected=f"a non-empty string other than {EMITTED!r}",
                         actual=repr(name))
  modes = dict(unsupported_modes or {})
  for mode, reason in modes.items():
    if not (isinstance(mode, str) and isinstance(reason, str) and reason):
      raise CrossgradError("bad entry in 'unsupported_modes'", op=op_name, backend=backend,
                           argument="unsupported_modes", expected="{mode: reason in words}",
                           actual=f"{mode!r}: {reason!r}")
  kernels = _KERNELS.setdefault((op_name, backend), {})
  kernels.pop(name, None)
  kernel = kernels[name] = Kernel(op_name, backend, fn, name, modes)
  return kernel


def unregister_kernel(op: str | OpDef, backend: str, name: str) -> Kernel:
  """Removes and returns the kernel registered as ``name`` for ``op`` and ``backend``."""
  op_name = op.name if isinstance(op, OpDef) else op
  kernel = lookup(op_name, backend, name)
  del _KERNELS[op_name, backend][name]
  return kernel


def kernels(op: str | OpDef, backend: str) -> list[Kernel]:
  """The kernels of ``op`` for ``backend``, in the order they were registered."""
  op_name = op.name if isinstance(op, OpDef) else op
  return list(_KERNELS.get((op_name, backend), {}).values())


def lookup(op: str, backend: str, impl: str | None) -> Kernel | None:
  """The kernel ``impl`` of ``op`` for ``backend``: None for ``EMITTED``, the last one
  registered for ``impl=None`` (None if there is none); an unknown name is an error."""
  if impl == EMITTED:
    return None
  found = _KERNELS.get((op, backend), {})
  if impl is None:
    return next(reversed(found.values()), None)
  if impl not in found:
    raise CrossgradError("no such kernel", op=op, backend=backend, argument=f"impl={impl!r}",
                         expected=" or ".join([repr(EMITTED), *map(repr, found)]),
                         actual=repr(impl))
  return found[impl]


def registered() -> list[Kernel]:
  """Every registered kernel, by op and backend, in the order they were registered."""
  return [kernel for found in _KERNELS.values() for kernel in found.values()]
