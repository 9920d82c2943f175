"""benchmarks/loop.py in its quick mode (NumPy alone) writes its figures (no timing asserts)."""

import json

from crossgrad.benchmarks import loop


def test_quick_run_writes_every_ratio_to_the_cold_check(tmp_path):
  path = tmp_path / "loop.json"
  payload = loop.run(json_path=str(path), **loop.settings(True))
  written = json.loads(path.read_text())
  assert written["rows"] == payload["rows"] and written["environment"]["cpus"]
  rows = {r["run"]: r for r in written["rows"]}
  assert set(rows) == {"cold one-op check (baseline)", "watch re-check after an edit",
                       "remembered run", "pytest --crossgrad (same op)"}
  cold = rows["cold one-op check (baseline)"]["seconds"]
  for row in rows.values():
    assert row["seconds"] > 0
    assert abs(row["ratio to cold"] - row["seconds"] / cold) < 1e-12
  assert {r: rows[r]["target"] for r in loop.TARGETS} == loop.TARGETS
