"""The ``fd``, ``fd_forward`` and ``declared`` rows: the reference backward against finite
differences, in float64, once per op and parameter set (`Scope.REFERENCE`)."""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, finite_diff
from crossgrad.checker.report import Check, Row, RowContext, first_line
from crossgrad.checker.rows import setting
from crossgrad.registry import validation
from crossgrad.registry.opdef import OpDef


def rows(run: setting.ReferenceRun) -> list[Row]:
  return finite_difference_rows(run.op, run.params, run.inputs, run.seed)


def _kept_for_last(compute: Callable[[list], Any]) -> Callable[[list], Any]:
  """``compute(arrays)``, kept for the last ``arrays`` (the same objects): one reference
  forward serves every cotangent finite differences ask for at one point."""
  last = []

  def at(arrays):
    if not (last and len(last[0]) == len(arrays)
            and all(a is b for a, b in zip(last[0], arrays))):
      last[:] = [list(arrays), compute(arrays)]
    return last[1]
  return at


def _floating(outputs) -> list[np.ndarray]:
  """The floating outputs, complex ones as pairs of reals: finite differences see R^2n."""
  return [compare.as_real(o) for o in validation.as_tuple(outputs) if compare.is_inexact(o.dtype)]


def finite_difference_rows(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                           seed: int = 0) -> list[Row]:
  """float64 rows checking the reference backward by finite differences.

  Exact ops, and the ``exact_inputs`` of the others, are checked against the forward; a
  surrogate op's other inputs against its ``surrogate``, with an informational
  ``fd_forward`` row showing how far they are from the forward's derivative; a declared
  op's other inputs have no oracle: an informational ``declared`` row says so, with the
  same distance.
  """
  reference = base.load("numpy")
  inputs = setting.cast_inputs(inputs, np.dtype(np.float64))
  context = RowContext(op.name, setting.params_label(params), "numpy", "cpu:0", "float64", "eager")

  def row(check, function, argnums, must_pass, note_fn):
    """Checks the cotangents of ``argnums`` against finite differences of ``function``."""
    def with_varied(varied):
      swap = dict(zip(argnums, varied))
      return [x if i not in swap else compare.as_complex(swap[i]) if np.iscomplexobj(x)
              else swap[i] for i, x in enumerate(inputs)]

    def target(varied):
      return _floating(function(reference.xp, *with_varied(varied), **params))

    vjp_at = _kept_for_last(lambda varied: reference.vjp(op, *with_varied(varied), **params))

    def vjp(varied, cotangents):
      """The real gradient: for complex arrays, in JAX's convention, conj(B(conj(c)))."""
      outputs, vjp_fn = vjp_at(varied)
      it = iter(cotangents)
      g = [None] * len(validation.as_tuple(outputs))
      for k, o in enumerate(validation.as_tuple(outputs)):
        if compare.is_inexact(o.dtype):
          g[k] = np.conj(compare.as_complex(next(it))) if np.iscomplexobj(o) else next(it)
      cts = setting.conjugated(vjp_fn(tuple(g) if isinstance(outputs, tuple) else g[0]))
      return [compare.as_real(cts[i]) for i in argnums]

    names = "inputs " + ", ".join(op.input_names[i] for i in argnums)
    start = time.perf_counter()
    try:
      at = [compare.as_real(inputs[i]) for i in argnums]  # The forward's outputs: `vjp_at`'s.
      err, how, finding = finite_diff.vjp_error(
          target, vjp, at, np.random.default_rng(seed),
          _floating(vjp_at(at)[0]) if function is forward else None)
    except Exception as e:  # pylint: disable=broad-except  # Informational rows stay so.
      return context.row(check, None, finite_diff.TOLERANCE, not must_pass, first_line(e),
                         time.perf_counter() - start)
    passed = err <= finite_diff.TOLERANCE
    return context.row(check, err, finite_diff.TOLERANCE, passed or not must_pass,
                       f"{names}; {how}; {finding or note_fn(passed)}",
                       time.perf_counter() - start)

  def forward(xp, *args, **kwargs):
    return op.forward(xp, *args, **kwargs)[0]

  def against_forward(p):
    return ("backward matches the forward's derivative" if p
            else "backward is NOT the derivative of forward")

  if op.gradient == "exact":
    return [row(Check.FD, forward, op.diff_argnums, True, against_forward)]
  rows = []
  if op.exact_argnums:
    rows.append(row(Check.FD, forward, op.exact_argnums, True, against_forward))
  surrogate_argnums = tuple(i for i in op.diff_argnums if i not in op.exact_argnums)
  if op.gradient == "declared":
    rows.append(row(Check.DECLARED, forward, surrogate_argnums, False,
                    lambda p: "no oracle: the backward is declared, so it is only compared "
                    "across backends" + ("; it equals the forward's derivative: could be "
                                         "exact" if p else "")))
    return rows
  rows.append(row(Check.FD_FORWARD, forward, surrogate_argnums, False,
                  lambda p: "backward equals the forward's derivative: could be exact" if p
                  else "surrogate: backward is not the forward's derivative, as declared"))
  rows.append(row(Check.FD, op.surrogate, surrogate_argnums, True,
                  lambda p: "backward matches the surrogate's derivative" if p
                  else "backward is NOT the derivative of the declared surrogate"))
  return rows
