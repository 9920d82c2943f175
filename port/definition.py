"""`Definition`: one custom-gradient definition found in a user's source file, translated.

A framework's source module (`crossgrad.port.torch_source`, ``jax_source``,
``tensorflow_source``) exposes ``find(tree, module, path) -> list[Definition]``: ``tree``
is the parsed source file, ``module`` the same file imported (porting runs the user's
code: its ``SAMPLES`` and ``GRADIENTS`` dicts, its originals), ``path`` its file name. It
translates each definition's forward and backward with `crossgrad.port.translate` and its
framework's table (`crossgrad.port.tables`); a construct it cannot carry becomes a
`Refusal` (line, call, why) and the definition is reported as refused, with nothing
written for it. `crossgrad.port.emit` turns the rest into ``cg.OpDef`` code.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

REQUIRED = object()  # A parameter without a default (its value comes from the sample).
# A --samples file's SAMPLES and GRADIENTS, over the source module's own (`samples_from`).
_EXTRA: contextvars.ContextVar[Any] = contextvars.ContextVar("crossgrad_port_samples",
                                                             default=None)


@dataclasses.dataclass(frozen=True)
class Refusal:
  """A construct the port cannot carry: its source line, the call (or statement) as
  written, and why, in words."""
  line: int
  call: str
  why: str

  def as_json(self) -> dict:
    return {"line": self.line, "call": self.call, "why": self.why}


@dataclasses.dataclass
class Definition:
  """One definition, translated to ``xp`` (the op language).

  Attributes:
    name: the definition's name in its module ("MyFn", "my_fn"), also ``SAMPLES``' key.
    framework: "torch", "jax" or "tensorflow".
    file, line: where it is defined; ``backward_line``: where its backward is (0: unknown).
    inputs: names of the array arguments, in call order.
    params: the other (Python) arguments: name -> default, or `REQUIRED`.
    sample_params: their values in the sample (what the check runs with).
    call_order: every argument name as the user-facing call takes them (inputs and params
      interleaved): the original kernel is called with them in this order.
    forward_source: ``def forward(xp, <inputs>, *, <params>): ... return outputs,
      residuals`` as source text (``residuals`` a tuple of arrays).
    backward_source: ``def backward(xp, residuals, g, *, <params>): ... return
      cotangents`` (one per input, None for a non-differentiable one; ``g`` mirrors the
      outputs, a tuple for several).
    residuals: what the forward saves, by name (for the comments in the output).
    original: the original as an attribute path in its module ("MyFn.apply", "my_fn").
    unsupported_modes: ``{mode: reason}`` for the modes the ORIGINAL cannot run in
      (declared on its kernel: "jvp", "vmap", "compile", ...).
    op_unsupported_modes: ``{"backend:mode": reason}`` for those the PORT cannot run in
      (the `OpDef`'s: ``"jax:jvp"`` for a backward not linear in its cotangent).
    nondiff: input names that get no cotangent.
    num_outputs: how many arrays the forward returns (1: a single array, not a tuple).
    jvp_source: for a definition whose rule is a JVP, ``def jvp(xp, primals, tangents,
      *, <params>)`` source, kept beside the op for the docs and the report; None
      otherwise.
    helpers: sources of module-level functions the forward or backward call, translated
      (``def name(xp, ...)``), written before the op.
    constants: module-level Python constants they read, name -> value source.
    refusals: the constructs it cannot carry; non-empty means refused.
    notes: what the report should say besides the status (e.g. how an argument was read).
  """

  name: str
  framework: str
  file: str
  line: int
  backward_line: int = 0
  inputs: tuple[str, ...] = ()
  params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  sample_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  call_order: tuple[str, ...] = ()
  forward_source: str = ""
  backward_source: str = ""
  residuals: tuple[str, ...] = ()
  original: str = ""
  unsupported_modes: Mapping[str, str] = dataclasses.field(default_factory=dict)
  op_unsupported_modes: Mapping[str, str] = dataclasses.field(default_factory=dict)
  nondiff: tuple[str, ...] = ()
  num_outputs: int = 1
  jvp_source: str | None = None
  helpers: tuple[str, ...] = ()
  constants: Mapping[str, str] = dataclasses.field(default_factory=dict)
  refusals: list[Refusal] = dataclasses.field(default_factory=list)
  notes: list[str] = dataclasses.field(default_factory=list)

  @property
  def refused(self) -> bool:
    return bool(self.refusals)

  def refuse(self, line: int, call: str, why: str) -> None:
    self.refusals.append(Refusal(line, call, why))


def is_array(value: Any) -> bool:
  """Whether a sample value is an input (a NumPy array) rather than a parameter."""
  return isinstance(value, np.ndarray)


def split_arguments(names: Sequence[str], sample: Sequence[Any] | None,
                    defaults: Mapping[str, Any]) -> tuple[tuple[str, ...], dict[str, Any],
                                                         dict[str, Any]]:
  """(inputs, params, sample_params) of a call taking ``names``: with a sample, its NumPy
  arrays are inputs and its Python values parameters (defaulting to the source's default,
  else to the sample's value); without one, every argument without a Python default is an
  input."""
  inputs, params, values = [], {}, {}
  for i, name in enumerate(names):
    if sample is not None and i < len(sample):
      if is_array(sample[i]):
        inputs.append(name)
      else:
        params[name] = defaults.get(name, sample[i])
        values[name] = sample[i]
    elif name in defaults and not isinstance(defaults[name], np.ndarray):
      params[name] = defaults[name]
    else:
      inputs.append(name)
  return tuple(inputs), params, values


def sample_mismatch(names: Sequence[str], sample: Sequence[Any] | None,
                    defaults: Mapping[str, Any]) -> str | None:
  """Why ``sample`` cannot be the positional arguments of a call taking ``names`` (None
  where it can: as many values, or fewer with a Python default for each one left out)."""
  if sample is None or len(sample) == len(names) or (
      len(sample) < len(names) and all(n in defaults for n in names[len(sample):])):
    return None
  return f"the sample has {len(sample)} arguments"


def samples(module: Any) -> Mapping[str, Any]:
  """``SAMPLES`` of the source module, with a ``--samples`` file's entries over them."""
  return {**(getattr(module, "SAMPLES", None) or {}),
          **(getattr(_EXTRA.get(), "SAMPLES", None) or {})}


def gradients(module: Any) -> Mapping[str, str]:
  """``GRADIENTS`` of the source module, with a ``--samples`` file's entries over them."""
  return {**(getattr(module, "GRADIENTS", None) or {}),
          **(getattr(_EXTRA.get(), "GRADIENTS", None) or {})}


@contextlib.contextmanager
def samples_from(module: Any) -> Iterator[None]:
  """Within the block, `samples` and `gradients` read ``module``'s dicts first."""
  token = _EXTRA.set(module)
  try:
    yield
  finally:
    _EXTRA.reset(token)
