r"""Writes docs/benchmarks.md from the benchmarks' JSON output, so no table is copied by hand.

  python -m crossgrad.benchmarks.run_all --out_dir=docs/benchmarks   # the JSON
  python -m crossgrad.benchmarks.docs_tables                         # the page
  python -m crossgrad.benchmarks.docs_tables --check   # exit 1 if the page differs

The page: the machine the JSON was measured on (from ``summary.json``: CPU, cores, OS,
Python, library versions, accelerators, load, date and the command), the figures that have
a target against it (`targets`), then one section per ``<name>.json``: what the benchmark
measures (its module docstring, or `TEMPLATE`), its scalar figures, its re-measure notes
(``remeasured``: a list of dated lines) and one Markdown table per list of records or dict,
as the JSON has them. Any benchmark's JSON renders without code here; `TEMPLATE`
only adds headings, intros, index column names and columns to leave out.
"""

from __future__ import annotations

import ast
import json
import math
import os
import pathlib
import re
import sys
from typing import Any

from absl import flags

from crossgrad.cli import usage

_PACKAGE = pathlib.Path(__file__).resolve().parent
_DOCS = _PACKAGE.parent / "docs"

# Optional, per benchmark (the JSON file's stem): "heading", "intro" (Markdown, instead of
# the module docstring), "index" ({key: column names of a nested dict's levels}), "hide"
# (columns left out: raw samples).
TEMPLATE: dict[str, dict[str, Any]] = {
    "summary": {"heading": "Targets",
                "intro": "The figures with a target, measured against it; every figure is "
                         "in its benchmark's section below."},
    "bernoulli_mask": {"heading": "bernoulli_mask against the hand-written stop_gradient mask",
                       "index": {"frameworks": ("framework", "setting")},
                       "hide": ("op_ms_all", "handwritten_ms_all")},
    "tf1_port_overhead": {"heading": "an op ported from TF1 against the same op as an OpDef"},
    "overhead_ste_sign": {
        "heading": "the sign straight-through estimator in every mode",
        "intro": "`overhead` for `handwritten.STE_SIGN` alone (forward `xp.sign(x)`, backward "
                 "`g * (abs(x) <= 1)`; larq's `ste_sign`), in every mode, against the same op "
                 "written with each framework's primitives, measured interleaved in one run: "
                 "`python -m crossgrad.benchmarks.overhead --ops=ste_sign "
                 "--sizes=1000,1000000 --budget_s=1.5 --threads=1 "
                 "--json=docs/benchmarks/overhead_ste_sign.json`."},
}
# Section headings of common keys; any other key is shown with "_" as spaces.
SECTIONS = {"rows": "Results", "no_baseline": "Ops without a hand-written baseline"}
# Environment keys shown under their own names in the machine table, in this order.
_MACHINE = (("processor", "CPU"), ("cpus", "cores"), ("platform", "OS"), ("python", "Python"))
_LOAD = "load_average_1m"
_SKIP = {"environment", "title"}  # Keys every payload has, rendered apart.
NOTES = "remeasured"  # A payload's dated notes on rows measured again: a list of lines.



def fmt(value: Any) -> str:
  """One table cell: floats to 4 significant digits, lists joined, no line breaks or pipes."""
  if isinstance(value, bool) or value is None:
    text = {True: "yes", False: "no", None: "-"}[value]
  elif isinstance(value, float):
    text = f"{value:.4g}" if math.isfinite(value) else str(value)
  elif isinstance(value, list):
    text = ", ".join(fmt(v) for v in value) or "none"
  elif isinstance(value, dict):
    text = json.dumps(value, sort_keys=True)
  else:
    text = str(value)
  return text.replace("\n", " ").replace("|", "\\|")


def _numeric(value: Any) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def table(rows: list[dict[str, Any]], hide: tuple[str, ...] = ()) -> list[str]:
  """A list of records as a Markdown table: columns in order of first appearance,
  numeric columns right-aligned."""
  columns = [c for c in dict.fromkeys(k for row in rows for k in row) if c not in hide]
  if not columns:
    return ["None."]
  align = ["---:" if all(_numeric(r[c]) for r in rows if c in r) else "---" for c in columns]
  lines = ["| " + " | ".join(fmt(c) for c in columns) + " |", "| " + " | ".join(align) + " |"]
  lines += ["| " + " | ".join(fmt(row.get(c, "")) for c in columns) + " |" for row in rows]
  return lines


def _scalar(value: Any) -> bool:
  return not isinstance(value, (dict, list)) or (
      isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value))


def _is_record(value: Any) -> bool:
  return isinstance(value, dict) and all(_scalar(v) for v in value.values())


def _records(value: Any) -> list[tuple[tuple[str, ...], dict]] | None:
  """A dict of (dicts of ...) records, all at one depth, as (keys, record) pairs."""
  if _is_record(value):
    return [((), value)]
  if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
    return None
  found = []
  for key, sub in value.items():
    inner = _records(sub)
    if inner is None:
      return None
    found += [((key,) + keys, record) for keys, record in inner]
  return found if len({len(keys) for keys, _ in found}) == 1 else None


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
  if not isinstance(value, dict):
    return [(prefix, value)]
  return [pair for key, sub in value.items()
          for pair in _flatten(sub, f"{prefix} / {key}" if prefix else str(key))]


def render_value(key: str, value: Any, spec: dict[str, Any]) -> list[str]:
  """One JSON value as Markdown: a list of records or a nested dict of them as a table,
  any other dict as a name/value table."""
  hide = tuple(spec.get("hide", ()))
  if isinstance(value, list):
    return table(value, hide) if value else ["None."]
  records = _records(value)
  if records is not None and records[0][0]:
    depth = len(records[0][0])
    names = tuple(spec.get("index", {}).get(key, ()))
    names += tuple(f"{key} {i + 1}" for i in range(len(names), depth))
    return table([dict(zip(names, keys), **record) for keys, record in records], hide)
  pairs = [(k, v) for k, v in _flatten(value) if k not in hide]
  return table([{"name": k, "value": v} for k, v in pairs]) if pairs else ["None."]


def _docstring(name: str) -> str:
  """The benchmark module's docstring without its command lines (the page has its own)."""
  path = _PACKAGE / f"{name}.py"
  if not path.exists():
    return ""
  kept, command_indent = [], None
  for line in (ast.get_docstring(ast.parse(path.read_text())) or "").splitlines():
    indent = len(line) - len(line.lstrip())
    if command_indent is not None and line.strip() and indent > command_indent:
      continue  # A command's continuation line.
    command_indent = None
    if re.match(r"\s+python -m ", line):
      command_indent = indent
      last = max((i for i, text in enumerate(kept) if text.strip()), default=None)
      if last is not None and kept[last].endswith(":"):  # "... as follows:" lost its end.
        kept[last] = kept[last][:-1] + "."
    else:
      kept.append(line)
  return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


def section(name: str, payload: dict[str, Any], machine: dict[str, Any],
            seconds: float | None, folder: str) -> list[str]:
  """The Markdown of one JSON file (in ``folder``, relative to the page): heading, intro,
  its own environment where it differs from the machine's, scalar figures, then one table
  per structured value."""
  spec = TEMPLATE.get(name, {})
  heading = spec.get("heading") or payload.get("title")
  lines = [f"## `{name}`" + (f": {heading}" if heading else ""), ""]
  intro = spec.get("intro") or _docstring(name)
  if intro:
    lines += [intro, ""]
  notes = [f"JSON: [`{name}.json`]({folder}/{name}.json)"]
  if seconds is not None:
    notes.append(f"ran for {seconds:.0f} s")
  env = payload.get("environment", {})
  notes += [f"{key.replace('_', ' ')}: {fmt(value)}" for key, value in env.items()
            if machine.get(key) != value and value not in ("", None)]
  lines += ["; ".join(notes) + ".", ""]
  scalars = {k: v for k, v in payload.items()
             if k not in _SKIP and k != NOTES and _scalar(v)}
  if scalars:
    lines += table([{"figure": k, "value": v} for k, v in scalars.items()]) + [""]
  if payload.get(NOTES):
    lines += ["Re-measured since:", ""] + [f"- {note}" for note in payload[NOTES]] + [""]
  for key, value in payload.items():
    if key in _SKIP or key in scalars or key == NOTES:
      continue
    lines += [f"### {SECTIONS.get(key, key.replace('_', ' ').capitalize())}", ""]
    lines += render_value(key, value, spec) + [""]
  return lines


def machine_section(summary: dict[str, Any], env: dict[str, Any]) -> list[str]:
  """Where and when the JSON was measured, and by which command."""
  accelerators = summary.get("accelerators")
  rows = [(label, env.get(key, "not recorded")) for key, label in _MACHINE]
  rows += [(key, value) for key, value in env.items() if key not in dict(_MACHINE)
           and key != _LOAD]
  rows.append(("accelerator", "not recorded" if accelerators is None
               else ", ".join(accelerators) or "none"))
  if _LOAD in env:
    rows.append(("load average (1 min) at the end", env[_LOAD]))
  machine = [{"machine": name, "value": value} for name, value in rows]
  lines = ["## The machine", ""] + table(machine) + [""]
  lines += [f"Measured on {summary.get('date', 'an unrecorded date')} with",
            "", "```text", summary.get("command") or "(command not recorded)", "```", ""]
  if summary.get("quick"):
    lines += ["These are **quick** runs (smallest sizes, few repeats): they show the shape "
              "of the results, not settled figures.", ""]
  load, cpus = env.get(_LOAD), env.get("cpus")
  if isinstance(load, (int, float)) and isinstance(cpus, int) and load > cpus:
    lines += [f"The machine was shared (load average {load:.1f} on {cpus} cores): absolute "
              "times are noisy; the ratios, each against a baseline measured interleaved in "
              "the same run, are the figures to read.", ""]
  return lines


def _load(results: pathlib.Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
  """summary.json and the other JSON files, in run order (then by name)."""
  payloads = {p.stem: json.loads(p.read_text()) for p in sorted(results.glob("*.json"))}
  summary = payloads.pop("summary", {})
  order = list(summary.get("seconds", {})) + sorted(payloads)
  return summary, {name: payloads[name] for name in dict.fromkeys(order) if name in payloads}


def page(results: pathlib.Path, page_path: pathlib.Path) -> str:
  """The whole page from the JSON in ``results``."""
  summary, payloads = _load(results)
  if not summary and not payloads:
    raise ValueError(f"no JSON in {results}: run python -m crossgrad.benchmarks.run_all "
                     f"--out_dir={results}")
  folder = os.path.relpath(results, page_path.parent)
  env = summary.get("environment") or next(iter(payloads.values())).get("environment", {})
  package_doc = (ast.get_docstring(ast.parse((_PACKAGE / "__init__.py").read_text())) or "")
  lines = ["# Benchmarks", "",
           "<!-- Generated by `python -m crossgrad.benchmarks.docs_tables` from "
           f"{folder}/*.json: edit the generator or rerun the benchmarks, not this page. -->",
           "", package_doc.replace("\n", " "), "",
           "Every table below is rendered from the JSON files the benchmarks wrote (in "
           f"[`{folder}/`]({folder}/)), on the machine described here.", ""]
  lines += machine_section(summary, env)
  lines += ["## How to reproduce", "",
            "Run every benchmark (add `--quick` for a fast, rough run; a single one runs "
            "as `python -m crossgrad.benchmarks.<name>`), then regenerate this page:", "",
            "```text", f"python -m crossgrad.benchmarks.run_all --out_dir={_rel(results)}",
            "python -m crossgrad.benchmarks.docs_tables"
            + _flags(results, page_path), "```", "",
            "The page is checked against its JSON in the tests; the same check by hand:", "",
            "```bash", "python -m crossgrad.benchmarks.docs_tables --check"
            + _flags(results, page_path), "```", ""]
  lines += targets_section(payloads)
  for name, payload in payloads.items():
    lines += section(name, payload, env, summary.get("seconds", {}).get(name), folder)
  return "\n".join(lines).rstrip("\n") + "\n"


def targets(payloads: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
  """The figures with a target, by direction ("lower" or "higher" is better): records of
  figure, target, measured value and whether it met the target, read from the payloads."""
  lower, higher = [], []
  if "overhead" in payloads:
    summary = payloads["overhead"]["summary"]
    over, rows = (int(n) for n in summary["rows_over_target"].split(" of "))
    lower += [
        ("overhead: rows above their ratio target", 0, over),
        ("overhead: max ratio under XLA", summary["target_ratio_xla"],
         summary["max_ratio_xla"]),
        ("overhead: max ratio eager and in graphs", summary["target_ratio_eager_graph"],
         summary.get("max_ratio_eager_graph")),
        ("overhead: JAX reverse mode / custom_vjp, max ratio", summary["target_ratio_xla"],
         summary["max_ratio_custom_vjp"])]
    if "max_ratio_checked" in summary:
      lower.append(("overhead: max ratio to the hand-written op making the same checks",
                    summary["target_ratio_checked"], summary["max_ratio_checked"]))
    higher.append(("overhead: same optimised HLO as custom_vjp (1 = yes)", 1,
                   int(summary["same_hlo_as_custom_vjp"])))
    lower[0] = (f"{lower[0][0]} (of {rows})", *lower[0][1:])
  if "check_cost" in payloads:
    lower += [(f"check_cost: {r['figure']}", r["target"], r["value"])
              for r in payloads["check_cost"].get("check_cost", [])]
  if "import_cost" in payloads:
    payload = payloads["import_cost"]
    lower.append(("import_cost: import crossgrad / import numpy, median",
                  payload["target_ratio"], payload["ratio"]))
  if "tf1_idiom" in payloads:
    payload = payloads["tf1_idiom"]
    at_1m = [r["speedup"] for r in payload["rows"] if r["elements"] == 1_000_000]
    if at_1m:
      higher.append(("tf1_idiom: best speedup over the TF1 idiom at 1M elements",
                     payload["target_speedup_at_1M"], max(at_1m)))
  met = {"lower": lambda value, target: value <= target,
         "higher": lambda value, target: value >= target}
  return {direction: [{"figure": figure, "target": target, "measured": value,
                       "met": value is not None and met[direction](value, target)}
                      for figure, target, value in found]
          for direction, found in (("lower", lower), ("higher", higher)) if found}


def targets_section(payloads: dict[str, dict[str, Any]]) -> list[str]:
  """The figures with a target: one table per direction, which the header names."""
  found = targets(payloads)
  if not found:
    return []
  spec = TEMPLATE["summary"]
  lines = [f"## {spec['heading']}", "", spec["intro"], ""]
  for direction, bound in (("lower", "at most"), ("higher", "at least")):
    if direction in found:
      header = {"figure": "figure", "target": f"target ({bound})",
                "measured": f"measured ({direction} is better)", "met": "met"}
      lines += table([{header[k]: v for k, v in r.items()} for r in found[direction]])
      lines.append("")
  return lines


def _rel(path: pathlib.Path) -> str:
  """A path relative to the repository root when inside it (as the commands take it)."""
  try:
    return str(path.resolve().relative_to(_PACKAGE.parent))
  except ValueError:
    return str(path)


def _flags(results: pathlib.Path, page_path: pathlib.Path) -> str:
  """The flags that differ from the defaults, so the printed commands reproduce this page."""
  out = ""
  if results.resolve() != (_DOCS / "benchmarks").resolve():
    out += f" --results={_rel(results)}"
  if page_path.resolve() != (_DOCS / "benchmarks.md").resolve():
    out += f" --page={_rel(page_path)}"
  return out


def define_flags():
  """The command-line flags; defined only when the module runs as the program."""
  flags.DEFINE_bool("check", False,
                    "Only compare the page with what the JSON gives; exit 1 if it differs.")
  flags.DEFINE_string("results", str(_DOCS / "benchmarks"),
                      "Folder of run_all's JSON: <name>.json and summary.json.")
  flags.DEFINE_string("page", str(_DOCS / "benchmarks.md"), "The Markdown page.")


def main(argv) -> int:
  del argv  # Unused.
  results, page_path = pathlib.Path(flags.FLAGS.results), pathlib.Path(flags.FLAGS.page)
  text = page(results, page_path)
  if flags.FLAGS.check:
    if not page_path.exists() or page_path.read_text() != text:
      print(f"{page_path} differs from what {results}/*.json gives: run python -m "
            "crossgrad.benchmarks.docs_tables" + _flags(results, page_path), file=sys.stderr)
      return 1
    return 0
  page_path.write_text(text)
  print(f"wrote {page_path}")
  return 0


if __name__ == "__main__":
  define_flags()
  usage.run(main)
