"""The row kinds of one backend, device and mode (`Scope.MODE`), after its `evaluate` ran,
and of one backend and device (`Scope.DEVICE`): each a function of the scope's record."""

from __future__ import annotations

import time

from crossgrad.checker import (compare, higher_order, implementations, round_trips,
                               special_values)
from crossgrad.checker.report import Check, Row, RowContext, first_line
from crossgrad.checker.rows.setting import DeviceRun, ModeRun


def device(run: ModeRun) -> list[Row]:
  """``device``: this device against the backend's first one in the mode (that one's
  results are kept in ``run.first`` for the next devices)."""
  target, context = run.target, run.context
  if context.mode not in run.first:
    run.first[context.mode] = (context.device, run.results)
    return []
  output_names, input_names = target.names
  return [device_row(context, run.results, run.first[context.mode],
                     output_names + input_names, target.tolerance, target.bitwise)]


def forward_vjp(run: ModeRun) -> list[Row]:
  """``forward`` and ``vjp``: outputs and cotangents against the reference; failing rows
  where `evaluate` raised."""
  target, context = run.target, run.context
  if run.results is None:
    return [context.row(check, None, target.tolerance, False, run.error, run.seconds)
            for check in (Check.FORWARD, Check.VJP)]
  outputs, cts = run.results
  output_names, input_names = target.names
  narrowed = round_trips.narrows_integers(run.module, context.mode)
  rows = []
  for check, got, want, names in ((Check.FORWARD, outputs, target.outputs, output_names),
                                  (Check.VJP, cts, target.cotangents, input_names)):
    bound = target.bounds.get(check, target.tolerance)  # A 16-bit kernel's: its own.
    result = compare.compare(compare.narrowing_undone(narrowed, got, want), want, names,
                             bound, bitwise=target.bitwise, whole_vector=check == Check.VJP)
    note = result.note if check not in target.bounds else "; ".join(
        filter(None, [implementations.RELATIVE_NOTE.format(bound / 2), result.note]))
    rows.append(context.row(check, result.error, bound, result.ok, note, run.seconds,
                            result.ulps))
  return rows


def determinism(run: ModeRun) -> list[Row]:
  """``determinism`` (asked for): the same setting run again, bit for bit."""
  if not run.settings.determinism:
    return []
  output_names, input_names = run.target.names
  return [determinism_row(run.context, run.evaluate, run.results, output_names + input_names)]


def special(run: ModeRun) -> list[Row]:
  """``special``: forward and VJP on special values (`special_values`); not in export
  modes, which are compared with eager (``round_trip``), which has these."""
  target, context = run.target, run.context
  if target.case is None or context.mode in round_trips.capabilities(run.module).EXTRA_MODES:
    return []
  return [special_values.row(target.op, target.params, context, run.module, target.case,
                             target.tolerance, target.bitwise,
                             run.settings.special == "strict")]


def round_trip(run: ModeRun) -> list[Row]:
  """``round_trip``: an export mode against the backend's eager results."""
  context = run.context
  if context.mode not in round_trips.capabilities(run.module).EXTRA_MODES:
    return []
  return [higher_order.round_trip_row(run.target.higher, context.backend, run.module,
                                      context.device, context.mode, run.eager, run.results)]


def jvp_second_order(run: ModeRun) -> list[Row]:
  """``jvp`` and ``second_order`` (`higher_order.mode_rows`), skipped rows where the
  backend or op cannot serve them."""
  target, context = run.target, run.context
  if round_trips.capabilities(run.module).evaluate_higher_order:  # Else skipped rows say why.
    run.settings.say(f"  {target.op.name} {context.params} {context.dtype} {context.backend} "
                     f"{context.device} {context.mode}: jvp, second order")
  return higher_order.mode_rows(target.higher, context.backend, run.module, context.device,
                                context.mode, run.results)


def transforms(run: DeviceRun) -> list[Row]:
  """``forward`` and ``vjp`` in each transformation mode, on a batch (what each returned
  kept in ``run.transformed``)."""
  chosen = higher_order.transforms_of(run.module, run.settings.modes)
  if not chosen:
    return []
  higher = run.target.higher
  run.settings.say(f"  {higher.op.name} {higher.label} {higher.dtype} {run.name} {run.device} "
                   f"{', '.join(chosen)}")
  rows, results = higher_order.transform_rows(higher, run.name, run.module, run.device,
                                              chosen)
  run.transformed.update(results)
  return rows


def device_row(context: RowContext, results, first, names, tolerance,
                bitwise=False) -> Row:
  """Compares one device's outputs and cotangents with the first device's."""
  first_device, first_results = first
  result = compare.compare([*results[0], *results[1]], [*first_results[0], *first_results[1]],
                           names, tolerance, bitwise=bitwise, reference=first_device)
  detail = ("bitwise equal" if result.identical
            else result.note or f"within tolerance, {result.ulps:.0f} ulps apart")
  return context.row(Check.DEVICE, result.error, tolerance, result.ok,
                     f"vs {first_device}: {detail}", 0.0, result.ulps)


def determinism_row(context: RowContext, run, results, names) -> Row:
  """The same setting run again: outputs and cotangents must be bitwise equal."""
  started = time.perf_counter()
  try:
    again = run()
  except Exception as e:  # pylint: disable=broad-except
    return context.row(Check.DETERMINISM, None, 0.0, False,
                       "second run raised: " + first_line(e), time.perf_counter() - started)
  result = compare.compare([*again[0], *again[1]], [*results[0], *results[1]], names, 0.0,
                           bitwise=True, reference="first run")
  return context.row(Check.DETERMINISM, result.error, 0.0, result.identical,
                     "bitwise equal in two runs" if result.identical
                     else f"nondeterministic: {result.note}", time.perf_counter() - started,
                     result.ulps)
