"""One check split into shards (processes, CI workers, Bazel test shards), and merged back.

A check's units of work (`engine.work_units`: per op and parameter set the reference's, then
one per dtype and backend) go to ``count`` shards by expected cost (`expected_seconds`,
measured per backend and mode: compiling ones and JAX's op-by-op eager weigh most), largest
first onto the least loaded shard, so every shard gets its share of the compile-heavy units; the split depends only on
the selection, so every shard computes the same one. Inputs, cotangents and directions are
seeded per op, parameter set and dtype, so a unit's rows do not depend on the shard.

A shard's JSON report carries an ``identity`` (`identity`): its index and count, the flags
that choose the rows, and every unit of the check; `merge` reads shard reports back, refuses
a missing, duplicated or mismatched one (other flags, other versions) by name, and orders
the rows as one run orders them.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Mapping, Sequence

from crossgrad.checker import engine
from crossgrad.checker import higher_order
from crossgrad.checker.report import Report
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

Unit = tuple[str, str, str, str]  # (op, params label, dtype, backend): `engine.work_units`.

# Expected seconds of one unit in one mode on a CPU (its forward, vjp, special, jvp and
# second-order rows): per-unit means of a full check's rows (1,007 rows, 2 cores), torch's
# compile without its first compilation (Inductor's start-up, once per process); batched_vjp's
# taken as vmap's (not measured).
MODE_SECONDS = {
    ("tensorflow", "eager"): 0.2, ("tensorflow", "graph"): 0.33, ("tensorflow", "jit"): 0.6,
    ("tensorflow", "vectorized_map"): 0.12,
    ("jax", "eager"): 1.8, ("jax", "jit"): 0.44, ("jax", "vmap"): 0.23,
    ("jax", "scan"): 0.23, ("jax", "checkpoint"): 0.23,
    ("jax", "batched_vjp"): 0.23,
    ("torch", "eager"): 0.16, ("torch", "compile"): 1.5, ("torch", "vmap"): 0.01,
    ("torch", "batched_vjp"): 0.01,
}
OTHER_MODE_SECONDS = 1.5  # A mode not measured: export round trips, a Keras backend's worker.
REFERENCE_SECONDS = 0.05  # The sample, finite differences and the reference's own rows.
# The check's flags that choose its rows: equal in every shard of one check.
ROW_FLAGS = ("ops", "backends", "dtypes", "devices", "modes", "impls", "cpu_devices", "module",
             "tolerance", "special", "precision", "determinism", "seed", "variants",
             "search")
# Environment entries that may differ between the machines running one check's shards.
MACHINE_ONLY = ("platform",)


def expected_seconds(unit: Unit, ops: Mapping[str, OpDef], modules: Mapping[str, Any],
                     modes: Sequence[str] | None) -> float:
  """What a unit is expected to cost (seconds per device): the sum over the modes it runs."""
  op, _, dtype, backend = unit
  if (dtype, backend) == engine.REFERENCE_UNIT:
    return REFERENCE_SECONDS
  module = modules[backend]
  run = [m for m in higher_order.modes_of(module, modes) + higher_order.transforms_of(
      module, modes) if f"{backend}:{m}" not in ops[op].unsupported_modes]
  return sum(MODE_SECONDS.get((backend, m), OTHER_MODE_SECONDS) for m in run)


def plan(units: Sequence[Unit], seconds: Sequence[float], count: int) -> list[list[Unit]]:
  """``units`` split into ``count`` shards of about equal expected ``seconds``: the longest
  unit first, each onto the least loaded shard (ties: the lower index); every shard's
  units in the check's order."""
  loads = [0.0] * count
  shard_of = {}
  for i in sorted(range(len(units)), key=lambda i: (-seconds[i], i)):
    shard = min(range(count), key=lambda s: (loads[s], s))
    shard_of[i] = shard
    loads[shard] += seconds[i]
  return [[u for i, u in enumerate(units) if shard_of[i] == s] for s in range(count)]


def from_bazel(environ: Mapping[str, str] = os.environ) -> tuple[int, int] | None:
  """(index, count) of a Bazel test shard (``TEST_SHARD_INDEX``, ``TEST_TOTAL_SHARDS``),
  None outside one. Touches ``TEST_SHARD_STATUS_FILE``: this test shards its work."""
  if "TEST_TOTAL_SHARDS" not in environ:
    return None
  values = {}
  for name in ("TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS"):
    try:
      values[name] = int(environ.get(name, ""))
    except ValueError:
      raise CrossgradError("Bazel's shard variable is not a number", argument=name,
                           actual=repr(environ.get(name))) from None
  index, count = values["TEST_SHARD_INDEX"], values["TEST_TOTAL_SHARDS"]
  check_shard(index, count, "TEST_SHARD_INDEX")
  if environ.get("TEST_SHARD_STATUS_FILE"):
    pathlib.Path(environ["TEST_SHARD_STATUS_FILE"]).touch()
  return index, count


def check_shard(index: int, count: int, argument: str = "--shard_index") -> None:
  if count < 1 or not 0 <= index < count:
    raise CrossgradError("no such shard", argument=argument,
                         expected=f"0 <= index < {count} shards", actual=str(index))


def identity(index: int, count: int, units: Sequence[Unit],
             flag_values: Mapping[str, Any]) -> dict[str, Any]:
  """What makes a shard's report one part of one check (its JSON's ``identity``)."""
  return {"index": index, "count": count, "flags": {f: flag_values[f] for f in ROW_FLAGS},
          "units": [list(u) for u in units]}


def _load(path: str) -> dict[str, Any]:
  try:
    data = json.loads(pathlib.Path(path).read_text())
  except (OSError, ValueError) as e:
    raise CrossgradError("cannot read the shard report", argument="--merge",
                         actual=f"{path!r} ({type(e).__name__}: {e})") from None
  if not isinstance(data, dict) or "identity" not in data or "rows" not in data:
    raise CrossgradError("not a shard report (written by --json with --num_shards)",
                         argument="--merge", actual=repr(path))
  return data


def _shared(data: dict[str, Any]) -> dict[str, Any]:
  """What every shard of one check has in common."""
  environment = {k: v for k, v in data["environment"].items() if k not in MACHINE_ONLY}
  return {"count": data["identity"]["count"], "flags": data["identity"]["flags"],
          "environment": environment, "units": data["identity"]["units"]}


def _check_shards(paths: Sequence[str], reports: Sequence[dict[str, Any]]) -> None:
  """Raises a `CrossgradError` naming a mismatched, duplicated or missing shard."""
  first = _shared(reports[0])
  by_index = {}
  for path, data in zip(paths, reports):
    for key, value in _shared(data).items():
      if value != first[key]:
        raise CrossgradError(f"shard {path!r} belongs to another check than {paths[0]!r}: "
                             f"its {key} differ", argument="--merge",
                             expected=json.dumps(first[key])[:300],
                             actual=json.dumps(value)[:300])
    index = data["identity"]["index"]
    if index in by_index:
      raise CrossgradError(f"shard {index} of {first['count']} is there twice",
                           argument="--merge", actual=f"{by_index[index]!r} and {path!r}")
    by_index[index] = path
  missing = [str(i) for i in range(first["count"]) if i not in by_index]
  if missing:
    raise CrossgradError(f"missing shard {', '.join(missing)} of {first['count']}",
                         argument="--merge", actual=", ".join(map(repr, paths)))


def merge(paths: Sequence[str]) -> Report:
  """One report from the shard reports at ``paths``, rows in one run's order."""
  if not paths:
    raise CrossgradError("no shard reports to merge", argument="--merge")
  reports = [_load(path) for path in paths]
  _check_shards(paths, reports)
  rows = [row for data in reports for row in Report.from_dict(data).rows]
  try:
    rows.sort(key=engine.row_order(reports[0]["identity"]["units"]))
  except KeyError as e:
    raise CrossgradError("a shard report has a row of no unit of the check",
                         argument="--merge", actual=str(e)) from None
  return Report(rows, max(data["seconds"] for data in reports), reports[0]["environment"])
