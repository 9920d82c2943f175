"""Every built-in op through the export round trips: SavedModel, jax2tf, jax.export."""

import crossgrad as cg
from crossgrad.registry.ops import BUILTIN

EXPORTS = {"tensorflow": ("saved_model", "jax2tf"), "jax": ("export",)}


def test_every_builtin_op_survives_every_export_round_trip():
  report = cg.cross_check(BUILTIN, modes=[m for modes in EXPORTS.values() for m in modes])
  assert report.ok, report.table(failures_only=True)
  for op in BUILTIN:
    rows = [r for r in report.rows if r.op == op.name]
    for backend, modes in EXPORTS.items():
      for mode in modes:
        checks = {r.check for r in rows if (r.backend, r.mode) == (backend, mode)}
        assert {"forward", "vjp", "round_trip", "second_order"} <= checks, (op.name, mode)
  round_trips = [r for r in report.rows if r.check == "round_trip"]
  assert round_trips and all(r.note.startswith("vs eager") for r in round_trips)
  forward_mode = {(r.mode, r.check) for r in report.rows if r.backend != "numpy"}
  assert ("saved_model", "jvp") in forward_mode  # A SavedModel keeps forward mode too.
  skipped = {r.note.split(":")[0] + " " + r.mode for r in report.rows  # numpy's: variants.
             if r.check == "skipped" and r.backend != "numpy"}
  assert skipped == {"jvp jax2tf", "jvp export"}
