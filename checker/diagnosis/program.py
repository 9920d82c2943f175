"""An op's forward and backward as one recorded program, run in any backend and mode.

`program_op` makes an `OpDef` whose forward runs the op's forward and then its backward on
the given output cotangents (extra inputs), through a recording `Namespace`; it returns
the op's outputs and cotangents, and optionally every floating intermediate (what a
compiled mode cannot show otherwise) or only the output of call k (a truncated prefix).
The backend runs it with its own `evaluate`, so each mode compiles it as it would the op.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, Sequence

import numpy as np

from crossgrad.checker.diagnosis import recording
from crossgrad.registry.opdef import OpDef


@dataclasses.dataclass
class Run:
  """One run of the program: its tape and the arrays it returned (NumPy)."""

  tape: recording.Tape
  finals: list[np.ndarray]  # The op's outputs, then its non-None input cotangents.
  kept: list[np.ndarray]  # Intermediates made outputs, or call k's outputs.


def is_floating(dtype: Any) -> bool:
  name = str(dtype)
  return "float" in name or "complex" in name


def _g(xp, outs: Sequence[Any], cts: Sequence[Any], single: bool):
  """The ``g`` the backward gets: each output's cotangent, zeros for a floating output
  with none, None for an integer one; one array where the forward returned one."""
  g = [ct if ct is not None else
       xp.zeros_like(recording.unwrap(o)) if is_floating(o.dtype) else None
       for o, ct in zip(outs, cts)]
  return g[0] if single else tuple(g)


def _body(op: OpDef, tape: recording.Tape, n_in: int, which: Sequence[int], how: str,
          specs: list):
  """The program's forward: ``how`` is "finals", "intermediates" or "prefix"; it notes
  its inputs' shapes and dtypes in ``specs``."""
  def forward(xp, *args, **params):
    specs[:] = [(a.shape, a.dtype) for a in args]
    tape.clear()
    rxp = recording.Namespace(xp, tape)
    inputs = recording.wrap(list(args[:n_in]), tape)
    cts = iter(recording.wrap(list(args[n_in:]), tape))
    try:
      outputs, residuals = op.forward(rxp, *inputs, **params)
      single = not isinstance(outputs, (tuple, list))
      outs = [outputs] if single else list(outputs)
      tape.phase = "backward"
      g = _g(xp, outs, [next(cts) if i in which else None for i in range(len(outs))],
             single)
      grads = op.backward(rxp, residuals, g, **params)
    except recording.Stop as stop:
      return tuple(stop.args[0]), ()
    finals = outs + [c for c in grads if c is not None]
    tape.final_sources = [tape.made.get(id(recording.unwrap(x))) for x in finals]
    if how == "intermediates":
      # Copies: an output that is another output too confuses torch.compile's wiring.
      finals += [recording.unwrap(x) + 0 for leaves in tape.keep for x in leaves
                 if is_floating(x.dtype)]
    return tuple(recording.unwrap(finals)), ()
  return forward


def program_op(op: OpDef, tape: recording.Tape, which: Sequence[int], how: str) -> OpDef:
  """The recorded program of ``op`` as an `OpDef` taking the op's inputs and then the
  cotangents of outputs ``which``; its backward returns zeros (it is never checked)."""
  nondiff, specs = op.nondiff_argnums, []
  n_in = len(op.input_names)
  forward = functools.wraps(op.forward)(_body(op, tape, n_in, which, how, specs))
  parameters = list(inspect.signature(op.forward).parameters.values())
  positional = parameters[:1 + n_in] + [
      inspect.Parameter(f"cotangent_{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD)
      for i in which]
  forward.__signature__ = inspect.Signature(positional + parameters[1 + n_in:])
  del forward.__wrapped__

  def backward(xp, residuals, g, **params):
    del residuals, g, params  # Zeros that read neither: JAX checks linearity in g.
    return tuple(None if i in nondiff else xp.zeros(shape, dtype=dtype)
                 for i, (shape, dtype) in enumerate(specs))

  return OpDef(name=f"{op.name}.program", forward=forward, backward=backward,
               gradient="declared", nondiff=nondiff)


def run(module: Any, op: OpDef, params: dict, inputs: Sequence[np.ndarray],
        cotangents: Sequence[np.ndarray | None], *, mode: str, device: str,
        how: str = "finals", stop_at: int | None = None,
        like: Sequence[np.ndarray] | None = None, n_kept: int = 0) -> Run:
  """Runs the recorded program of ``op`` in backend ``module`` (``evaluate``) and mode.
  ``like``: arrays like its results (the reference's), for the zero cotangents the
  backend's evaluation takes (None: the reference's own run); ``n_kept``: how many of
  them ``how`` adds to the finals (intermediates, call k's)."""
  which = [i for i, ct in enumerate(cotangents) if ct is not None]
  light = mode != module.MODES[0]
  tape = recording.Tape(stop_at=stop_at, keep_raw=how == "intermediates", light=light)
  prog = program_op(op, tape, which, how)
  args = list(inputs) + [cotangents[i] for i in which]
  # Zero cotangents: the program's backward is never wanted.
  zeros = ([None] * (len(cotangents) + len(inputs) - len(op.nondiff_argnums)) if like is None
           else [np.zeros_like(x) if is_floating(x.dtype) else None for x in like])
  with module.precision_scope(args, float32="highest"):  # Part of every backend.
    outs, _ = module.evaluate(prog, params, args, zeros, device=device, mode=mode)
  outs = [np.asarray(o) for o in outs]
  n_final = len(outs) - n_kept
  return Run(tape, outs[:n_final], outs[n_final:])
