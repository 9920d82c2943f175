"""What row kinds are handed: the setting a check runs in and the records of one scope."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from crossgrad.checker import compare, higher_order, special_values
from crossgrad.checker.report import RowContext
from crossgrad.registry.opdef import OpDef


COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}  # Same precision.


def cast_inputs(inputs: Sequence[np.ndarray], dtype: np.dtype) -> list[np.ndarray] | None:
  """Floating inputs cast to ``dtype``, complex ones to the complex dtype of its precision
  (`COMPLEX_OF`); integer inputs (indices, labels) unchanged. None where a complex input
  has no complex dtype of that precision (float16, bfloat16)."""
  if any(np.iscomplexobj(x) for x in inputs) and dtype.name not in COMPLEX_OF:
    return None
  return [x.astype(dtype) if compare.is_floating(x.dtype)
          else x.astype(COMPLEX_OF[dtype.name]) if np.iscomplexobj(x) else x for x in inputs]


def conjugated(arrays: Sequence[Any]) -> list[Any]:
  return [np.conj(a) if a is not None and np.iscomplexobj(a) else a for a in arrays]


def params_label(params: dict) -> str:
  """A parameter set as rows name it (``params``): ``k=v,...`` sorted, ``-`` for none."""
  return ",".join(f"{k}={v}" for k, v in sorted(params.items())) or "-"


@dataclasses.dataclass(frozen=True)
class Settings:
  """What every row of one check shares (`cross_check`'s arguments, checked)."""

  devices: str | Sequence[str]
  modes: Sequence[str] | None
  seed: int
  say: Callable[[str], None]
  tolerance: str | float | None
  special: str | None
  determinism: bool
  units: frozenset | None = None
  impls: frozenset | None = None  # Implementations to check (None: all).
  variants: str | None = None  # `variants.policy`.
  variant_dtype: str | None = None  # The dtype of the backends' variant rows.
  search: int = 0  # Examples per op the search draws (`crossgrad.checker.search`).

  def wants(self, op: OpDef, label: str, dtype: str, backend: str) -> bool:
    """Whether this check runs the unit (`engine.work_units`)."""
    return self.units is None or (op.name, label, dtype, backend) in self.units

  def runs_backend(self, backend: str) -> bool:
    """Whether this check runs any unit of ``backend``."""
    return self.units is None or any(unit[3] == backend for unit in self.units)


@dataclasses.dataclass
class Target:
  """One op, parameter set and dtype: inputs, cotangent, what the reference computes for
  them (and on special values: ``case``), and how rows compare with it."""

  op: OpDef
  params: dict
  inputs: list[np.ndarray]
  cotangent: list[np.ndarray | None]
  outputs: tuple
  cotangents: tuple
  case: special_values.SpecialCase | None
  higher: higher_order.OpCase
  tolerance: float
  bitwise: bool
  # Per check, a tolerance replacing ``tolerance`` (a 16-bit kernel's: `implementations`).
  bounds: dict = dataclasses.field(default_factory=dict)
  # The input variants' reference results, made on first use (`rows.variant_rows.cases`),
  # shared by the kernels' targets made from this one.
  variant_cases: dict = dataclasses.field(default_factory=dict)

  @property
  def is_complex(self) -> bool:
    """Complex inputs or outputs: rows beyond forward and vjp are not covered yet."""
    return any(np.iscomplexobj(x) for x in (*self.inputs, *self.outputs))

  @property
  def names(self) -> tuple[list[str], list[str]]:
    return ([f"output {i}" for i in range(len(self.outputs))],
            [f"d{name}" for name in self.op.input_names])


@dataclasses.dataclass(frozen=True)
class ReferenceRun:
  """The `Scope.REFERENCE` record: one op and parameter set, its sampled inputs, and the
  check's `variants.policy`."""

  op: OpDef
  params: dict
  inputs: list[np.ndarray]
  seed: int
  variants: str | None = None
  search: int = 0


@dataclasses.dataclass(frozen=True)
class ModeRun:
  """The `Scope.MODE` record: one backend, device and mode, after the backend's
  `evaluate` ran the target: its ``results`` (outputs, cotangents), or the first line of
  what it raised (``error``), and the seconds it took. ``first`` maps a mode to the first
  device's results (the ``device`` kind fills it); ``eager``: this device's eager results,
  where they ran before. ``evaluate(op)`` runs another op on the same inputs instead:
  the ``custom_rule`` kind's sentinel."""

  target: Target
  context: RowContext
  module: Any
  settings: Settings
  evaluate: Callable[..., tuple]
  results: tuple | None
  error: str
  seconds: float
  first: dict
  eager: tuple | None


@dataclasses.dataclass(frozen=True)
class DeviceRun:
  """The `Scope.DEVICE` record: one backend and device, after its modes. ``first_device``:
  whether ``device`` is the first the backend runs on; ``transformed``: what each
  transformation mode returned (outputs, cotangents), which the ``transforms`` kind fills
  for the kinds after it (the ``custom_rule`` kind's sentinel)."""

  target: Target
  name: str
  module: Any
  device: str
  settings: Settings
  first_device: bool = True
  transformed: dict = dataclasses.field(default_factory=dict)

