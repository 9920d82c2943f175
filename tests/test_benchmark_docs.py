"""docs/benchmarks.md is what `docs_tables` renders from the kept JSON, and any JSON renders."""

import json
import pathlib
import shutil
import subprocess
import sys

from crossgrad.benchmarks import docs_tables

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "benchmarks"
PAGE = ROOT / "docs" / "benchmarks.md"


def _tables(*args):
  return subprocess.run([sys.executable, "-m", "crossgrad.benchmarks.docs_tables", *args],
                        capture_output=True, text=True, timeout=300, check=False)


def test_the_page_is_what_the_kept_json_gives():
  assert (RESULTS / "summary.json").exists(), "run run_all --out_dir=docs/benchmarks"
  assert docs_tables.page(RESULTS, PAGE) == PAGE.read_text()
  done = _tables("--check")
  assert done.returncode == 0, done.stderr


def test_the_page_says_where_when_and_how_it_was_measured():
  summary = json.loads((RESULTS / "summary.json").read_text())
  text = PAGE.read_text()
  env = summary["environment"]
  for value in (env["processor"], f"| cores | {env['cpus']} |", env["platform"],
                env["python"], env["tensorflow"], env["jax"], summary["date"],
                summary["command"]):
    assert str(value) in text, value
  assert f"| accelerator | {', '.join(summary['accelerators']) or 'none'} |" in text
  for name in summary["seconds"]:
    assert f"[`{name}.json`](benchmarks/{name}.json)" in text


def test_a_changed_value_makes_the_check_fail(tmp_path):
  results = tmp_path / "benchmarks"
  shutil.copytree(RESULTS, results)
  page = tmp_path / "benchmarks.md"
  assert _tables(f"--results={results}", f"--page={page}").returncode == 0
  flags = [f"--results={results}", f"--page={page}", "--check"]
  assert _tables(*flags).returncode == 0
  name = next(n for n in json.loads((results / "summary.json").read_text())["seconds"]
              if "rows" in json.loads((results / f"{n}.json").read_text()))
  payload = json.loads((results / f"{name}.json").read_text())
  row = payload["rows"][0]
  key = next(k for k, v in row.items() if isinstance(v, float))
  row[key] = row[key] * 1.5 + 1.0
  (results / f"{name}.json").write_text(json.dumps(payload))
  done = _tables(*flags)
  assert done.returncode == 1 and str(page) in done.stderr
  assert docs_tables.fmt(row[key]) in docs_tables.page(results, page)


def test_table_renders_records_in_order_of_first_appearance():
  rows = [{"op": "a|b", "ratio": 1.23456, "ok": True}, {"op": "c", "extra": [1, 2.5]}]
  assert docs_tables.table(rows) == [
      "| op | ratio | ok | extra |",
      "| --- | ---: | --- | --- |",
      "| a\\|b | 1.235 | yes |  |",
      "| c |  |  | 1, 2.5 |"]
  assert docs_tables.table(rows, hide=("ratio", "ok", "extra")) == [
      "| op |", "| --- |", "| a\\|b |", "| c |"]


def test_nested_dicts_become_tables_with_index_columns():
  value = {"tf": {"x": {"ms": 1.0}, "y": {"ms": 2.0}}, "jax": {"x": {"ms": 3.0}}}
  assert docs_tables.render_value("frameworks", value, {}) == [
      "| frameworks 1 | frameworks 2 | ms |", "| --- | --- | ---: |",
      "| tf | x | 1 |", "| tf | y | 2 |", "| jax | x | 3 |"]
  named = docs_tables.render_value("frameworks", value,
                                   {"index": {"frameworks": ("framework", "setting")}})
  assert named[0] == "| framework | setting | ms |"
  mixed = {"max": 1.5, "per op": {"a": 2.0, "b": {"c": 3}}}  # Not records: name / value.
  assert docs_tables.render_value("summary", mixed, {}) == [
      "| name | value |", "| --- | ---: |", "| max | 1.5 |", "| per op / a | 2 |",
      "| per op / b / c | 3 |"]


def _write(folder, name, payload):
  (folder / f"{name}.json").write_text(json.dumps(payload))


def test_a_new_benchmark_renders_without_code(tmp_path):
  env = {"python": "3.11.7", "platform": "Linux-x", "processor": "Some CPU", "cpus": 2,
         "numpy": "2.0", "torch": "2.13.0", "load_average_1m": 5.0}
  _write(tmp_path, "summary", {"environment": env, "quick": True, "date": "2030-01-02",
                               "command": "python -m crossgrad.benchmarks.run_all --quick",
                               "accelerators": [], "seconds": {"zz_new": 3.0},
                               "headlines": {"zz_ratio": 1.25}})
  _write(tmp_path, "zz_new", {"environment": dict(env, load_average_1m=1.0),
                              "title": "Torch overhead", "repeats": 3,
                              "rows": [{"op": "leaky_relu", "ratio": 1.1}],
                              "by_size": {"1000": {"ms": 0.5}}})
  text = docs_tables.page(tmp_path, tmp_path / "page.md")
  assert "## `zz_new`: Torch overhead\n" in text and "| leaky_relu | 1.1 |" in text
  assert "### By size\n" in text and "| by_size 1 | ms |" in text and "| 1000 | 0.5 |" in text
  assert "| repeats | 3 |" in text and "## Targets" not in text  # zz_new sets none.
  assert "ran for 3 s; load average 1m: 1." in text  # Its own load, not the machine's.
  assert "| accelerator | none |" in text and "| torch | 2.13.0 |" in text
  assert "Measured on 2030-01-02" in text and "**quick**" in text
  assert "load average 5.0 on 2 cores" in text  # Busier than its cores: says so.
  assert "python -m crossgrad.benchmarks.run_all --quick\n" in text
  assert text.count("```") % 2 == 0


def test_the_intro_is_the_module_docstring_without_its_commands():
  intro = docs_tables._docstring("tf1_port_overhead")  # pylint: disable=protected-access
  assert intro.startswith("What a port costs") and "python -m" not in intro
  assert not intro.endswith(":")
  intro = docs_tables._docstring("check_cost")  # Its command goes on to a second line.
  assert intro.startswith("What checking costs") and "--threads" not in intro.split("\n\n")[1]


def test_targets_one_direction_per_table_and_notes_as_a_dated_list(tmp_path):
  env = {"python": "3.11.7", "cpus": 2}
  _write(tmp_path, "summary", {"environment": env, "seconds": {"check_cost": 1.0}})
  _write(tmp_path, "check_cost", {
      "environment": env, "remeasured": ["2030-01-02: the scaling rows"],
      "check_cost": [{"figure": "cold s", "value": 75.0, "target": 60.0, "met": False},
                     {"figure": "warm / cold", "value": 0.3, "target": 0.4, "met": True}]})
  _write(tmp_path, "tf1_idiom", {"environment": env, "target_speedup_at_1M": 4.0, "rows": [
      {"elements": 1000, "speedup": 9.0}, {"elements": 1000000, "speedup": 3.0}]})
  text = docs_tables.page(tmp_path, tmp_path / "page.md")
  assert ("| figure | target (at most) | measured (lower is better) | met |\n"
          "| --- | ---: | ---: | --- |\n"
          "| check_cost: cold s | 60 | 75 | no |\n"
          "| check_cost: warm / cold | 0.4 | 0.3 | yes |\n") in text
  assert ("| figure | target (at least) | measured (higher is better) | met |\n"
          "| --- | ---: | ---: | --- |\n"  # The 1M row only: 3 < 4.
          "| tf1_idiom: best speedup over the TF1 idiom at 1M elements | 4 | 3 | no |\n") in text
  assert "Re-measured since:\n\n- 2030-01-02: the scaling rows\n" in text
  assert "| remeasured |" not in text
