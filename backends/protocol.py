"""The backend protocol: what a framework module implements to run crossgrad ops.

A backend is a module (or any object) with the members of `Backend`. The built-in ones
are `crossgrad.backends.numpy` (the reference), `.tensorflow`, `.jax` and `.torch`; another one
joins with `crossgrad.backends.base.register` and is then cross-checked like the others
(``cross_check(backends=[name])``). Backends name no op: everything op-specific comes
from the `OpDef` they are handed.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Protocol, Sequence, runtime_checkable

import numpy as np

from crossgrad.registry.opdef import OpDef
from crossgrad.registry.validation import ArraySpec


@runtime_checkable
class Backend(Protocol):
  """One framework behind crossgrad.

  Attributes:
    NAME: the backend's name ("tensorflow"), as used in flags, reports and errors.
    VERSION: the framework's version string, for reports.
    MODES: execution modes `evaluate` takes, e.g. ("eager", "jit"); the first is eager.
    xp: the namespace op definitions are written against (`crossgrad.registry.namespace`).
  """

  NAME: str
  VERSION: str
  MODES: tuple[str, ...]
  xp: Any

  def get(self, op: str | OpDef, /, **params: Any) -> Callable[..., Any]:
    """The framework's differentiable function for ``op`` with static ``params``
    (``tf.custom_gradient``, ``jax.custom_vjp``, ...), cached per (op, params)."""

  def spec_of(self, x: Any) -> ArraySpec:
    """Static shape and dtype name of one of the framework's arrays (at trace time too)."""

  def devices(self) -> list[str]:
    """Every device the framework sees, as ``platform:index``, CPU first."""

  def evaluate(self, op: OpDef, params: dict, inputs: Sequence[np.ndarray],
               cotangent: Sequence[np.ndarray | None], *, device: str,
               mode: str) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray | None, ...]]:
    """Runs ``op`` on NumPy ``inputs`` on ``device`` in ``mode``: its outputs (a tuple) and
    the input cotangents for output ``cotangent`` (None for integer outputs), as NumPy,
    one entry per input (None for non-differentiable inputs)."""

  def precision_scope(self, arrays: Sequence[np.ndarray | None]) -> ContextManager[Any]:
    """A scope in which the framework keeps the dtypes of ``arrays`` (e.g. JAX's x64)."""

  def register_container(self, cls: type, flatten: Callable[[Any], tuple[Any, Any]],
                         unflatten: Callable[[Any, Any], Any]) -> None:
    """Lets the framework's transformations see through ``cls`` (a JAX pytree node);
    ``flatten(obj) -> (children, aux)``, ``unflatten(aux, children) -> obj``."""


MEMBERS = ("NAME", "VERSION", "MODES", "xp", "get", "spec_of", "devices", "evaluate",
           "precision_scope", "register_container")
