"""The cross-check engine: every backend against the NumPy reference, and the
reference against finite differences.

For each op and static-parameter set the op's ``sample`` gives inputs, and the row kinds
of `crossgrad.checker.rows` run in their table's order: once per op and parameter set
(finite differences of the reference, float64), then per dtype, backend, device and mode
after the backend's `evaluate` ran on the inputs and one shared random cotangent
(forward, vjp, device, special values, higher order), and per backend and device
(transformation modes). The engine makes what they share: the sample, the reference's
arrays per dtype (`setting.Target`), each backend's results.
Frameworks are imported only through `crossgrad.backends.common.base.load`, and only for
the backends asked for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import platform
import sys
import time
import traceback
import zlib
from typing import Any, Callable, Collection, Iterable, Sequence

import numpy as np

from crossgrad.checker import (compare, finite_diff, higher_order, implementations, overflow,
                               round_trips, search as search_lib, selection, special_values,
                               variants as variants_lib)
from crossgrad.checker import rows as row_kinds
from crossgrad.checker.rows import setting
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef
from crossgrad.checker.report import Check, Report, Row, RowContext, first_line

TOLERANCE = compare.TOLERANCE
max_relative_error = compare.max_relative_error
DEFAULT_DTYPES = ("float32", "float64")


def _load(name: str):
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  return base.load(name)


def _default_backends() -> list[str]:
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  return base.default_backends()


COMPLEX_NOT_COVERED = ("complex inputs: forward and vjp rows only; no jvp, second-order, "
                       "transformation or special-value rows yet (docs/dtypes.md)")


def _random_like(rng: np.random.Generator, o: np.ndarray) -> np.ndarray | None:
  """A random cotangent for output ``o`` (complex where it is), None for an integer one."""
  if not compare.is_inexact(o.dtype):
    return None
  if np.iscomplexobj(o):
    return (finite_diff.uniform(rng, o.shape)
            + 1j * finite_diff.uniform(rng, o.shape)).astype(o.dtype)
  return finite_diff.uniform(rng, o.shape, o.dtype)


def _evaluate(module, op: OpDef, params: dict, inputs, cotangent, *, device: str, mode: str):
  """``module.evaluate``, its cotangents in JAX's convention, the reference's: a backend
  whose complex gradients are conjugated (``CONJUGATE_COMPLEX_GRADIENTS``: TensorFlow,
  torch) gets the conjugate cotangent and its cotangents are conjugated back."""
  if not (op.allow_complex and round_trips.capabilities(module).CONJUGATE_COMPLEX_GRADIENTS):
    return module.evaluate(op, params, inputs, cotangent, device=device, mode=mode)
  outputs, cts = module.evaluate(op, params, inputs, setting.conjugated(cotangent), device=device,
                                 mode=mode)
  return outputs, tuple(setting.conjugated(cts))


def _sample(op: OpDef, seed: int, params: dict) -> list[np.ndarray]:
  if op.sample is None:
    raise CrossgradError("cannot cross-check an op without 'sample'", op=op.name,
                         argument="sample", hint="Add OpDef(sample=lambda rng: (...,))")
  rng = np.random.default_rng([seed, zlib.crc32(op.name.encode()), len(params)])
  inputs = [np.asarray(x) for x in op.sample(rng)]
  validation.check_input_count(op, "numpy", inputs)
  return inputs


REFERENCE_UNIT = ("-", "numpy")  # (dtype, backend) of the unit of the reference's rows.


def work_units(ops: Sequence[OpDef], dtypes: Sequence[str],
               backends: Sequence[str]) -> list[tuple[str, str, str, str]]:
  """The units of work of a check, ``(op, params label, dtype, backend)``, in the order it
  runs them: per op and parameter set, the reference's (`REFERENCE_UNIT`: the sample,
  finite-difference and per-dtype reference rows), then one per dtype and backend.
  ``cross_check(units=...)`` runs only the units given (`crossgrad.checker.shards`)."""
  units = []
  for op in ops:
    for params in op.param_sets:
      label = setting.params_label(op.resolve_params(params))
      units.append((op.name, label, *REFERENCE_UNIT))
      units += [(op.name, label, dtype, backend) for dtype in dtypes for backend in backends
                if backend != "numpy"]
  return units


def _select_devices(available: Sequence[str], devices: str | Sequence[str]):
  """The devices asked for, in the backend's order, and the requests it has no device for."""
  wanted = [devices] if isinstance(devices, str) else list(devices)
  if "all" in wanted:
    return list(available), []
  chosen = [d for d in available if d in wanted or d.split(":")[0] in wanted]
  missing = [w for w in wanted if not any(w in (d, d.split(":")[0]) for d in available)]
  return chosen, missing


def _environment(backends: Iterable[str]) -> dict[str, Any]:
  env = {"python": sys.version.split()[0], "platform": platform.platform(),
         "numpy": np.__version__}
  for name in backends:
    module = _load(name)
    env[name] = module.VERSION
    env[f"{name}_devices"] = module.devices()
  return env


def _comparer(tolerance: float, bitwise: bool) -> Callable[..., tuple[float, str]]:
  """`higher_order.OpCase`'s comparison: (error, note) of `compare.compare` at ``tolerance``."""
  def compare_arrays(actual, expected, names, whole_vector=False):
    result = compare.compare(actual, expected, names, tolerance, bitwise=bitwise,
                             whole_vector=whole_vector)
    error = result.error if result.ok else max(result.error, np.nextafter(tolerance, np.inf))
    return error, result.note
  return compare_arrays


def _warm_up(modules: dict[str, Any], modes: Sequence[str] | None,
             settings: setting.Settings) -> list[str]:
  """Starts each checked backend's optional `warm_up` (torch: Inductor's CPU probe, which
  then runs alongside the other backends' rows); returns their names."""
  started = []
  for name, module in modules.items():
    warm_up = round_trips.capabilities(module).warm_up
    if warm_up is not None and settings.runs_backend(name):
      warm_up(higher_order.modes_of(module, modes))
      started.append(name)
  return started


def cross_check(
    ops: Iterable[str | OpDef] | str | OpDef | None = None,
    *,
    backends: Sequence[str] | None = None,
    dtypes: Sequence[str] = DEFAULT_DTYPES,
    devices: str | Sequence[str] = "all",
    modes: Sequence[str] | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    inputs: Sequence[np.ndarray] | None = None,
    tolerance: str | float | None = None,
    special: bool | str = True,
    precision: str = "highest",
    determinism: bool = False,
    units: Collection[tuple[str, str, str, str]] | None = None,
    impls: Collection[str] | None = None,
    variants: bool | str | None = "default",
    search: int = 0,
) -> Report:
  """Cross-checks ops (names or `OpDef`s; default: every registered op).

  Args:
    ops: what to check.
    backends: frameworks compared with the NumPy reference (default: TensorFlow, JAX and
      PyTorch where installed; `crossgrad.backends.common.base.default_backends`).
    dtypes: floating dtypes the inputs are cast to (integer inputs stay integer).
    devices: "all", a platform ("cpu", "gpu", "cuda", "tpu") or device names ("gpu:1"), or a
      list of these. Where more than one device runs, ``device`` rows compare each one
      with the backend's first device (same dtype and mode); a request a backend has no
      device for is a failing row.
    modes: execution and transformation modes to cover, e.g. ("eager", "jit", "vmap");
      default every mode each backend has (TensorFlow: eager, graph, jit, vectorized_map;
      JAX: eager, jit, vmap, scan, checkpoint; torch: eager, compile, vmap). Export round
      trips (TensorFlow: saved_model, jax2tf; JAX: export) run only when named here. A backend
      without the optional members these need (`evaluate_higher_order`, `TRANSFORMS`,
      `EXTRA_MODES`), or declaring a check unsupported in a mode (torch compiled:
      `UNSUPPORTED_CHECKS`), gets ``skipped`` rows saying so.
    seed: seeds the sampled inputs, cotangents and finite-difference directions.
    progress: called with a line of text as each group of checks starts.
    inputs: arrays to check every op with instead of its ``sample``.
    tolerance: of the comparison rows: None or "default" (per dtype, `compare.TOLERANCE`),
      a number, or "bitwise" (identical bits across backends, modes and devices; NaN
      matches NaN): a row then names the first element that differs.
    special: compare every setting on special values too (``special`` rows): True or
      "advisory" (default: differences only at special elements, or a framework raising
      there, are advisory rows that pass; `special_values`), "strict" (they fail), False
      or "off" (no special rows).
    precision: "highest" (default: every backend computes float32 matmuls and convolutions
      in full float32 precision, no TF32 or bfloat16 passes, for the check only: each
      backend's `precision_scope`) or "framework" (the frameworks' own defaults, to measure
      them).
    determinism: run every backend, device and mode twice, compared bit for bit
      (``determinism`` rows: GPU scatter-adds); it doubles the forward and vjp rows' time.
    units: run only these units of work (`work_units`; default all): one shard of a
      check split across processes (`crossgrad.checker.shards`).
    impls: "emitted" and kernels' names (docs/kernels.md) to check; default all of them.
    variants: ``variant`` rows (`variants`): "default", "all" (every mode) or "none".
    search: examples per op and parameter set a property-based search draws from
      the sample (`search`; 0: no search): one ``search`` row each.

  Returns:
    A `Report`; ``report.ok`` is True only if every row passed and one checked something.

  Raises:
    CrossgradError: an unknown op, backend, dtype, device, mode, tolerance, special-value
      policy or precision, or a selection that checks nothing (`selection`).
  """
  start, opdefs, reference = time.perf_counter(), selection.ops(ops), _load("numpy")
  backends = _default_backends() if backends is None else backends
  modules = selection.backends(backends)
  resolved = selection.check(opdefs, modules, dtypes, devices, modes)
  settings = setting.Settings(devices, modes, seed, progress or (lambda _: None),
                              compare.check_tolerance(tolerance),
                              special_values.policy(special), determinism,
                              _frozen(units), _frozen(impls), variants_lib.policy(variants),
                              _variant_dtype(resolved), search_lib.examples(search))
  warming = _warm_up(modules, modes, settings)
  with pinned(modules, precision):
    rows = _rows(opdefs, inputs, resolved, backends, reference, modules, settings, warming)
  return Report(rows, time.perf_counter() - start, _environment(modules))


def _frozen(values: Collection | None) -> frozenset | None:
  return None if values is None else frozenset(values)


def _variant_dtype(dtypes: Collection[str]) -> str | None:
  """The dtype of the backends' ``variant`` rows: float64 where the check has it, else
  float32 (16-bit dtypes: none; their rounding is the dtype rows' to judge)."""
  return next((d for d in ("float64", "float32") if d in dtypes), None)


def _rows(opdefs, inputs, dtypes, backends, reference, modules, settings: setting.Settings,
          warming: Sequence[str]) -> list[Row]:
  """Every op's rows, in one run's order, the units of the backends ``warming`` up run
  after the others' (`_warm_ups_last`)."""
  units = work_units(opdefs, dtypes, backends)
  parts = _warm_ups_last(units, warming, settings)
  rows: list[Row] = []
  for part in parts:
    for index, op in enumerate(opdefs, 1):
      rows += _op_rows(op, f"[{index}/{len(opdefs)}]", inputs, dtypes, reference, modules,
                       part)
  if len(parts) > 1:
    rows.sort(key=row_order(units))
  return rows


def _warm_ups_last(units: Sequence[tuple], late: Sequence[str],
                   settings: setting.Settings) -> list[setting.Settings]:
  """``settings`` split in two: its ``units`` (`work_units`) of backends not warming up,
  then those of the ``late`` ones, whose warm-up (torch: a few seconds of C++ compiles) runs
  meanwhile instead of holding up their first row; ``[settings]`` when nothing else would
  run meanwhile."""
  units = [u for u in units if settings.units is None or u in settings.units]
  first = frozenset(u for u in units if u[3] not in late)
  if not late or not any(backend != "numpy" for *_, backend in first):
    return [settings]
  return [dataclasses.replace(settings, units=first),
          dataclasses.replace(settings, units=frozenset(units) - first)]


# Rows of the reference's unit before every dtype's rows (the sample, finite differences,
# variants).
_FIRST = (Check.SAMPLE, Check.FD, Check.FD_FORWARD, Check.DECLARED, Check.VARIANT,
          Check.SEARCH)


def row_order(units: Sequence[Sequence[str]]) -> Callable[[Row], tuple]:
  """The sort key putting rows in the order one run of ``units`` (`work_units`) makes
  them, whatever order they were made in (shards, backends warming up)."""
  pairs = {tuple(u[:2]): i for i, u in enumerate(u for u in units if u[3] == "numpy")}
  dtypes = {d: i for i, d in enumerate(dict.fromkeys(u[2] for u in units if u[3] != "numpy"))}
  backends = {b: i for i, b in enumerate(dict.fromkeys(u[3] for u in units))}

  def key(row):
    if row.backend != "numpy":
      return pairs[row.op, row.params], dtypes[row.dtype], backends[row.backend]
    if row.check in _FIRST:
      return pairs[row.op, row.params], -1, -1
    return pairs[row.op, row.params], dtypes.get(row.dtype, -1), -1
  return key


PRECISIONS = ("highest", "framework")


@contextlib.contextmanager
def pinned(modules: dict[str, Any], precision: str, argument: str = "precision"):
  """With ``precision="highest"``, every backend in full float32 precision for the block
  (its `precision_scope(..., float32="highest")`), restored afterwards."""
  if precision not in PRECISIONS:
    raise selection.unknown(argument, precision, PRECISIONS)
  with contextlib.ExitStack() as stack:
    if precision == "highest":
      for module in modules.values():
        stack.enter_context(module.precision_scope((), float32="highest"))
    yield


def _op_rows(op: OpDef, counter: str, inputs, dtypes: dict[str, np.dtype], reference,
             modules, settings: setting.Settings) -> list[Row]:
  rows = []
  for params in op.param_sets:
    params = op.resolve_params(params)
    label = setting.params_label(params)
    own = settings.wants(op, label, *REFERENCE_UNIT)  # The reference's rows are this run's.
    if not own and not any(settings.wants(op, label, d, b) for d in dtypes for b in modules):
      continue
    settings.say(f"{counter} {op.name} {label}: " + ("finite differences" if own else "sample"))
    try:
      op_inputs = (_sample(op, settings.seed, params) if inputs is None
                   else [np.asarray(x) for x in inputs])
    except Exception as e:  # pylint: disable=broad-except
      rows += [RowContext(op.name, label, "numpy", "cpu:0", "-", "-").row(
          Check.SAMPLE, note=first_line(e))] if own else []
      continue
    if own:
      run = setting.ReferenceRun(op, params, op_inputs, settings.seed, settings.variants,
                                 settings.search)
      rows += [r for kind in row_kinds.of_scope(row_kinds.Scope.REFERENCE)
               for r in kind.rows(run)]
    second = _second_sample(op, settings.seed, params) if inputs is None else None
    for dtype, numpy_dtype in dtypes.items():
      cast = setting.cast_inputs(op_inputs, numpy_dtype)
      if cast is None:
        rows += [RowContext(op.name, label, "numpy", "cpu:0", dtype, "-").row(
            Check.SKIPPED, ok=True, note=f"complex inputs: no complex dtype of {dtype}'s "
            "precision (complex64 is checked with float32, complex128 with float64)")
                 ] if own else []
        continue
      rows.extend(_dtype_rows(op, params, label, cast, numpy_dtype, reference, modules,
                              settings, second and setting.cast_inputs(second, numpy_dtype)))
  return rows


def _second_sample(op: OpDef, seed: int, params: dict) -> list[np.ndarray] | None:
  """Another sample, the second example of the transformation modes' batch."""
  try:
    return _sample(op, seed + 1, params)
  except Exception:  # pylint: disable=broad-except
    return None


def _target(op, params, inputs, numpy_dtype: np.dtype, reference, modules,
            settings: setting.Settings, second, context: RowContext):
  """The `setting.Target` of one op, parameter set and dtype, and the reference's rows (it
  raised: a ``reference`` row, and no target; on special values: a ``special`` row)."""
  dtype = numpy_dtype.name
  rng = np.random.default_rng([settings.seed, zlib.crc32(dtype.encode())])
  try:
    outputs, vjp_fn = reference.vjp(op, *inputs, **params)
    ref_outputs = validation.as_tuple(outputs)
    cotangent = [_random_like(rng, o) for o in ref_outputs]
    ref_cts = vjp_fn(tuple(cotangent) if isinstance(outputs, tuple) else cotangent[0])
  except Exception as e:  # pylint: disable=broad-except
    return None, [context.row(Check.REFERENCE, note=first_line(e))]
  bitwise = settings.tolerance == compare.BITWISE
  tolerance = compare.tolerance_for(dtype, settings.tolerance)
  strict = settings.special == "strict"
  rows = [r for r in [overflow.row(context, op, params, inputs, cotangent, ref_outputs,
                                    ref_cts, reference)] if r is not None]
  case = None
  complex_case = any(np.iscomplexobj(x) for x in (*inputs, *ref_outputs))
  if settings.special and modules and not complex_case:
    try:
      case = special_values.prepare(op, params, inputs, numpy_dtype, reference, settings.seed)
    except Exception as e:  # pylint: disable=broad-except
      rows.append(context.row(
          Check.SPECIAL, ok=not strict, note=("" if strict else "advisory: ")
          + "reference on special values: " + first_line(e),
          advisory="" if strict else "reference raises"))
  higher = higher_order.OpCase(op, params, context.params, dtype, list(inputs),
                               list(cotangent), tolerance, _comparer(tolerance, bitwise),
                               settings.seed, second, (outputs, vjp_fn, ref_cts))
  return setting.Target(op, params, list(inputs), cotangent, ref_outputs, ref_cts, case,
                        higher, tolerance, bitwise), rows


def _dtype_rows(op, params, label, inputs, numpy_dtype: np.dtype, reference, modules,
                settings: setting.Settings, second=None) -> list[Row]:
  dtype = numpy_dtype.name
  own = settings.wants(op, label, *REFERENCE_UNIT)
  wanted = {name: m for name, m in modules.items() if settings.wants(op, label, dtype, name)}
  if not own and not wanted:
    return []
  numpy_context = RowContext(op.name, label, "numpy", "cpu:0", dtype, "eager")
  target, reference_rows = _target(op, params, inputs, numpy_dtype, reference, modules,
                                   settings, second, numpy_context)
  rows = reference_rows if own else []
  if target is None:
    return rows
  for name, module in wanted.items():
    for impl, impl_target in implementations.targets(target, name, module, settings.impls,
                                                     _evaluate):
      with implementations.scope(impl):
        backend_rows = _backend_rows(impl_target, numpy_context, name, module, settings)
      rows += implementations.judged(backend_rows, impl)
  return rows


def _backend_rows(target: setting.Target, numpy_context: RowContext, name: str, module,
                  settings: setting.Settings) -> list[Row]:
  """The rows of one backend (and implementation: `implementations.scope`) on every
  device and in every mode."""
  chosen, missing = _select_devices(module.devices(), settings.devices)
  rows = [numpy_context.at(backend=name, device=wanted, mode="-").row(
      Check.DEVICE, note=f"{name} has no such device (it has "
      f"{', '.join(module.devices())})") for wanted in missing]
  first = {}  # mode -> (first device, its outputs and cotangents)
  for device in chosen:
    eager = None  # This device's eager outputs and cotangents, for the export modes.
    for mode in higher_order.modes_of(module, settings.modes):
      context = numpy_context.at(backend=name, device=device, mode=mode)
      mode_rows, results = _mode_rows(target, context, module, settings, first, eager)
      rows += mode_rows
      eager = results if mode == module.MODES[0] and results else eager
    run = setting.DeviceRun(target, name, module, device, settings,
                            first_device=device == chosen[0])
    rows += _kind_rows(row_kinds.Scope.DEVICE, run, target.is_complex)
  return rows


def _kind_rows(scope, run, is_complex: bool, results_failed: bool = False) -> list[Row]:
  """The rows of every kind of ``scope`` for ``run``, in the table's order (`row_kinds`):
  a kind that needs results gets none where they failed; a complex target gets no rows of
  a kind that does not cover it (in the mode scope, a ``skipped`` row says so once)."""
  rows, said = [], scope != row_kinds.Scope.MODE
  for kind in row_kinds.of_scope(scope):
    if kind.needs_results and results_failed:
      continue
    if is_complex and not kind.complex_inputs:
      if not said:
        rows.append(run.context.row(Check.SKIPPED, ok=True, note=COMPLEX_NOT_COVERED))
        said = True
      continue
    rows += kind.rows(run)
  return rows


def _mode_rows(target: setting.Target, context: RowContext, module,
               settings: setting.Settings, first, eager) -> tuple[list[Row], tuple | None]:
  """The rows of one backend, device and mode, and its outputs and cotangents (None if it
  raised); ``first`` maps a mode to the first device's (filled by the ``device`` kind)."""
  op = target.op
  reason = op.unsupported_modes.get(f"{context.backend}:{context.mode}")
  if reason is not None:
    return [context.row(Check.SKIPPED, ok=True, note=f"unsupported by the op: {reason}")], None
  where = f"{op.name} {context.params} {context.dtype} {context.backend} {context.device}"
  settings.say(f"  {where} {context.mode}")

  def evaluate(instead: OpDef | None = None):
    return _evaluate(module, instead or op, target.params, target.inputs, target.cotangent,
                     device=context.device, mode=context.mode)

  started = time.perf_counter()
  results, error = None, ""
  try:
    results = evaluate()
  except Exception as e:  # pylint: disable=broad-except
    error = first_line(e)
    if not isinstance(e, CrossgradError):
      error += " | " + traceback.format_exc(limit=-1).strip().splitlines()[-1][:200]
  run = setting.ModeRun(target, context, module, settings, evaluate, results, error,
                        time.perf_counter() - started, first, eager)
  return _kind_rows(row_kinds.Scope.MODE, run, target.is_complex, results is None), results
