"""A check split into shards and merged gives one run's rows; --jobs gives one run's report.

Shards of a small check (two ops, one of them with a planted wrong backward, so FAIL rows
are merged too) run in this process and are merged from their JSON reports: the rows
equal the unsharded run's in order, keys, status and error. A missing, duplicated or
mismatched shard is refused by name. The binary runs --jobs=2 against --jobs=1, and
--merge exits as one run would.
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.checker import engine, shards
from crossgrad.checker.report import Check

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLANTED = cg.OpDef("shards_planted_square", lambda xp, x: (x * x, (x,)),
                   lambda xp, r, g: (g * r[0],),  # Should be 2 * x * g.
                   sample=lambda rng: (rng.standard_normal(5),))
SELECTION = dict(backends=["jax"], dtypes=["float32", "float64"], modes=["eager", "jit"])
FLAGS = {name: None for name in shards.ROW_FLAGS}


def _key(row):
  return (row.op, row.params, row.backend, row.device, row.dtype, row.mode, row.check,
          row.status, row.error if row.error is None else float(row.error))


@pytest.fixture(scope="module")
def ops():
  cg.register(PLANTED)
  yield [cg.get("leaky_relu"), PLANTED]
  cg.unregister(PLANTED.name)


def _run_shards(ops, count, folder):
  """Each shard of the small check run here, its report written as the binary writes it."""
  units = engine.work_units(ops, SELECTION["dtypes"], SELECTION["backends"])
  modules = {"jax": base.load("jax")}
  seconds = [shards.expected_seconds(u, {op.name: op for op in ops}, modules,
                                     SELECTION["modes"]) for u in units]
  paths = []
  for index, mine in enumerate(shards.plan(units, seconds, count)):
    report = cg.cross_check(ops, units=mine, **SELECTION)
    paths.append(str(folder / f"shard{index}_of_{count}.json"))
    pathlib.Path(paths[-1]).write_text(json.dumps({**report.to_dict(), "identity": (
        shards.identity(index, count, units, FLAGS))}))
  return paths


@pytest.fixture(scope="module")
def shard_files(ops, tmp_path_factory):
  """count -> the shard reports of the small check (and of leaky_relu alone: "passing")."""
  folder = tmp_path_factory.mktemp("shards")
  files = {count: _run_shards(ops, count, folder) for count in (2, 3)}
  (folder / "passing").mkdir()
  return {**files, "passing": _run_shards(ops[:1], 2, folder / "passing")}


@pytest.fixture(scope="module")
def whole(ops):
  return cg.cross_check(ops, **SELECTION)


@pytest.mark.parametrize("count", [2, 3])
def test_merged_shards_equal_one_run(shard_files, whole, count):
  merged = shards.merge(shard_files[count])
  assert [_key(r) for r in merged.rows] == [_key(r) for r in whole.rows]
  assert not whole.ok and any(r.check == Check.FD and not r.ok for r in merged.rows)
  assert merged.checked == whole.checked and merged.environment == whole.environment


def test_each_unit_runs_in_one_shard_only(shard_files):
  reports = [json.loads(pathlib.Path(p).read_text()) for p in shard_files[2]]
  fd_rows = [[r for r in data["rows"] if r["check"] == "fd"] for data in reports]
  assert sorted(len(rows) for rows in fd_rows) in ([0, 3], [1, 2])  # 2 leaky_relu, 1 planted.
  assert all(data["rows"] for data in reports)


def test_plan_balances_expected_cost_not_unit_count():
  units = [("op", str(i), "float32", "torch") for i in range(7)]
  seconds = [8.0, 8.0, 1.0, 1.0, 1.0, 1.0, 1.0]
  parts = shards.plan(units, seconds, 2)
  assert parts == shards.plan(units, seconds, 2)  # Deterministic.
  assert sorted(sum(seconds[units.index(u)] for u in part) for part in parts) == [10.0, 11.0]
  assert [sum(seconds[units.index(u)] == 8.0 for u in part) for part in parts] == [1, 1]
  assert sorted(u for part in parts for u in part) == sorted(units)
  assert all(part == sorted(part, key=units.index) for part in parts)  # The check's order.
  assert shards.plan(units[:1], seconds[:1], 3) == [units[:1], [], []]


def test_expected_cost_counts_the_modes_a_unit_runs(ops):
  modules = {"jax": base.load("jax")}
  by_name = {op.name: op for op in ops}
  unit = ("leaky_relu", "alpha=0.2", "float32", "jax")
  eager = shards.expected_seconds(unit, by_name, modules, ["eager"])
  every = shards.expected_seconds(unit, by_name, modules, None)  # Transformations too.
  assert eager == shards.MODE_SECONDS["jax", "eager"] and every > eager + shards.MODE_SECONDS[
      "jax", "jit"]
  assert shards.MODE_SECONDS["torch", "compile"] > 5 * shards.MODE_SECONDS["torch", "eager"]


def _edited(path, folder, edit):
  data = json.loads(pathlib.Path(path).read_text())
  edit(data)
  out = folder / f"edited_{pathlib.Path(path).name}"
  out.write_text(json.dumps(data))
  return str(out)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["identity"]["flags"].update(seed=1), "its flags differ"),
    (lambda d: d["environment"].update(jax="0.0.1"), "its environment differ"),
    (lambda d: d["identity"].update(count=3), "its count differ"),
    (lambda d: d["identity"]["units"].pop(), "its units differ"),
])
def test_a_mismatched_shard_is_named(shard_files, tmp_path, edit, message):
  first, second = shard_files[2]
  bad = _edited(second, tmp_path, edit)
  with pytest.raises(cg.CrossgradError, match=message) as e:
    shards.merge([first, bad])
  assert bad in str(e.value) and str(e.value).startswith("[crossgrad] --merge")


def test_missing_and_duplicated_shards_are_named(shard_files, tmp_path):
  first, second = shard_files[2]
  with pytest.raises(cg.CrossgradError, match="missing shard 1 of 2"):
    shards.merge([first])
  with pytest.raises(cg.CrossgradError, match="shard 0 of 2 is there twice"):
    shards.merge([first, second, first])
  (tmp_path / "report.json").write_text(cg.cross_check(["leaky_relu"], backends=[],
                                                       dtypes=["float64"]).to_json())
  with pytest.raises(cg.CrossgradError, match="not a shard report"):
    shards.merge([first, str(tmp_path / "report.json")])


def test_bazel_sharding_variables(tmp_path):
  status = tmp_path / "status"
  assert shards.from_bazel({}) is None
  assert shards.from_bazel({"TEST_TOTAL_SHARDS": "4", "TEST_SHARD_INDEX": "3",
                            "TEST_SHARD_STATUS_FILE": str(status)}) == (3, 4)
  assert status.exists()  # Tells Bazel the test shards its work.
  for bad in ({"TEST_TOTAL_SHARDS": "4", "TEST_SHARD_INDEX": "4"},
              {"TEST_TOTAL_SHARDS": "four", "TEST_SHARD_INDEX": "0"}):
    with pytest.raises(cg.CrossgradError, match="TEST_"):
      shards.from_bazel(bad)


def _check(*args, cwd):
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [str(ROOT.parent), str(cwd)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
  return subprocess.run([sys.executable, "-m", "crossgrad.check", *args], capture_output=True,
                        text=True, timeout=600, env=env, cwd=cwd, check=False)


def test_jobs_and_merge_exit_as_one_run(shard_files, tmp_path):
  (tmp_path / "planted_jobs_ops.py").write_text(textwrap.dedent("""
      import crossgrad as cg
      cg.register(cg.OpDef(
          "jobs_planted_square", lambda xp, x: (x * x, (x,)),
          lambda xp, r, g: (g * r[0],),  # Should be 2 * x * g.
          sample=lambda rng: (rng.standard_normal(5),)))
  """))
  selection = ["--module=planted_jobs_ops", "--ops=leaky_relu,jobs_planted_square",
               "--backends=jax", "--modes=eager", "--dtypes=float64"]
  one = _check(*selection, "--jobs=1", "--json=one.json", cwd=tmp_path)
  two = _check(*selection, "--jobs=2", "--json=two.json", cwd=tmp_path)
  assert one.returncode == two.returncode == 1, two.stderr
  rows = [json.loads((tmp_path / f"{n}.json").read_text())["rows"] for n in ("one", "two")]
  keys = [[{k: v for k, v in r.items() if k != "seconds"} for r in rs] for rs in rows]
  assert keys[0] == keys[1] and len(keys[0]) > 10
  assert [l for l in two.stdout.splitlines() if "FAIL" in l] == [
      l for l in one.stdout.splitlines() if "FAIL" in l]
  merged = _check(f"--merge={','.join(shard_files[2])}", "--json=merged.json", cwd=tmp_path)
  assert merged.returncode == 1 and "shards_planted_square" in merged.stdout, merged.stderr
  assert "identity" not in json.loads((tmp_path / "merged.json").read_text())
  assert _check(f"--merge={','.join(shard_files['passing'])}", cwd=tmp_path).returncode == 0


def test_a_shard_warms_up_only_the_backends_it_runs(ops, monkeypatch):
  """`engine.cross_check` starts a backend's `warm_up` (torch's CPU probe) only in a shard
  with units of that backend, with the modes the check runs."""
  started = {}
  for name in ("jax", "torch"):
    monkeypatch.setattr(base.load(name), "warm_up", lambda modes, name=name:
                        started.setdefault(name, list(modes)), raising=False)
  units = [u for u in engine.work_units(ops[:1], ["float32"], ["jax", "torch"])
           if u[3] != "torch"]
  engine.cross_check(ops[:1], backends=["jax", "torch"], dtypes=["float32"],
                     modes=["eager"], special=False, units=units)
  assert started == {"jax": ["eager"]}


@pytest.mark.parametrize("in_job", [True, False])
def test_a_job_exits_at_once_with_its_output_and_status(in_job):
  """`jobs.exit_now` in a --jobs job: the status given, buffered output written, the
  interpreter's teardown (atexit handlers) skipped; outside a job it returns."""
  from crossgrad.checker import jobs  # pylint: disable=g-import-not-at-top
  script = textwrap.dedent("""
      import atexit, sys
      from crossgrad.checker import jobs
      atexit.register(lambda: print("teardown"))
      print("report", end="")
      jobs.exit_now(3)
      print(" returned")
      """)
  env = {k: v for k, v in os.environ.items() if k != jobs.JOB_ENV}
  env["PYTHONPATH"] = os.pathsep.join([str(ROOT.parent), env.get("PYTHONPATH", "")])
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**env, jobs.JOB_ENV: "1"} if in_job else env, check=False)
  assert (result.returncode, result.stdout) == ((3, "report") if in_job
                                                else (0, "report returned\nteardown\n"))
