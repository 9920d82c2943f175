r"""Array API conformance of each backend's ``xp``, next to NumPy's own namespace.

  python -m crossgrad.benchmarks.array_api_conformance --suite=/path/to/array-api-tests

Runs the standard's own test suite (data-apis/array-api-tests, with the specification
data-apis/array-api checked out as its ``array-api/`` folder; not part of crossgrad) once
per namespace, on the same settings: ``ARRAY_API_TESTS_VERSION=2024.12``, the fft
extension disabled, Hypothesis derandomized with ``--max_examples`` examples per test
(so every namespace sees the same inputs), no deadline, 64-bit JAX. Two selections are
reported apart: the functions (the suite without the array-object tests: what crossgrad
controls) and the array object (the frameworks' own array types, which crossgrad never
patches). Prints passed/failed per namespace and per test file, the slowest files, and
writes everything (with each failure's message) as JSON.
"""

from __future__ import annotations

import collections
from importlib import metadata
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from absl import app
from absl import flags

from crossgrad.benchmarks import timing

VERSION = "2024.12"
ARRAY_OBJECT = ("array_method", "array_attribute", "test_iop", "test_array_object",
                "test_dlpack")
SELECTIONS = {
    "functions": " and ".join(f"not {name}" for name in ARRAY_OBJECT),
    "array object": " or ".join(ARRAY_OBJECT),
}
# What ARRAY_API_TESTS_MODULE names for each namespace.
NAMESPACES = {
    "numpy-native": "numpy",
    "jax-native": "jax.numpy",
    "numpy": "exec('import crossgrad; xp = crossgrad.numpy.xp')",
    "jax": "exec('import crossgrad; xp = crossgrad.jax.xp')",
    "tensorflow": "exec('import crossgrad; xp = crossgrad.tensorflow.xp')",
}

FLAGS = flags.FLAGS


def define_flags():
  """The binary's flags (defined only when it runs, so importing defines none)."""
  flags.DEFINE_string("suite", None, "A checkout of data-apis/array-api-tests whose "
                      "array-api/ folder holds data-apis/array-api.")
  flags.DEFINE_list("namespaces", ["numpy-native", "numpy", "jax", "tensorflow"],
                    "Namespaces to run: " + ", ".join(NAMESPACES))
  flags.DEFINE_list("selections", list(SELECTIONS), "Parts of the suite to run.")
  flags.DEFINE_integer("max_examples", 20, "Hypothesis examples per test.")
  flags.DEFINE_list("files", [], "Test files of the suite to run (default: all).")
  flags.DEFINE_string("keyword", None, "A further pytest -k expression.")
  flags.DEFINE_integer("timeout_s", 1800, "Seconds allowed per namespace run.")
  flags.DEFINE_string("json", "out/array_api_conformance.json", "Where to write JSON.")


def _check_suite(suite: pathlib.Path):
  if not (suite / "array_api_tests").is_dir() or not (
      suite / "array-api" / "spec" / VERSION).is_dir():
    raise app.UsageError(
        f"{suite} is not an array-api-tests checkout with the {VERSION} specification in "
        "array-api/: git clone https://github.com/data-apis/array-api-tests and "
        "https://github.com/data-apis/array-api (as its array-api/ folder)")


def _environ(namespace: str) -> dict[str, str]:
  env = dict(os.environ)
  here = str(pathlib.Path(__file__).resolve().parents[2])  # This crossgrad's parent.
  env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
  # A fixed hash seed: with derandomized Hypothesis, every namespace then sees the same
  # examples (strategies sample from sets, whose order follows the hash seed).
  env.update(ARRAY_API_TESTS_MODULE=NAMESPACES[namespace], ARRAY_API_TESTS_VERSION=VERSION,
             JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2",
             PYTHONHASHSEED="0")
  return env


def run_suite(suite: str, namespace: str, selection: str, *, max_examples: int,
              files: Sequence[str] = (), keyword: str | None = None,
              timeout_s: int = 1800) -> dict:
  """One pytest run of the suite for ``namespace``: counts and seconds per test file,
  and every failure with its message."""
  suite_path = pathlib.Path(suite).resolve()
  _check_suite(suite_path)
  expression = SELECTIONS[selection] + (f" and ({keyword})" if keyword else "")
  targets = [f"array_api_tests/{f}" for f in files] or ["array_api_tests"]
  with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "report.json")
    command = [sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider",
               "--disable-extension", "fft", f"--max-examples={max_examples}",
               "--derandomize", "--disable-deadline", "-k", expression, "--json-report",
               f"--json-report-file={report}", "--json-report-omit", "collectors", "log",
               "streams", "traceback"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=suite_path, env=_environ(namespace), timeout=timeout_s,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if not os.path.exists(report):
      raise RuntimeError(f"{namespace}: the suite did not run:\n{done.stdout[-3000:]}"
                         f"\n{done.stderr[-3000:]}")
    with open(report) as f:
      tests = json.load(f)["tests"]
  files_out = collections.defaultdict(collections.Counter)
  failures = []
  for test in tests:
    name = test["nodeid"].split("::")[0].rsplit("/", 1)[-1]
    outcome = "failed" if test["outcome"] == "error" else test["outcome"]
    files_out[name][outcome] += 1
    files_out[name]["seconds"] += sum(test.get(s, {}).get("duration", 0.0)
                                      for s in ("setup", "call", "teardown"))
    if outcome == "failed":
      phase = test.get("call") or test.get("setup") or {}
      message = phase.get("crash", {}).get("message", phase.get("longrepr", ""))
      failures.append({"test": test["nodeid"], "message": message.split("\n")[0][:300]})
  total = sum(files_out.values(), collections.Counter())
  return {"passed": total["passed"], "failed": total["failed"], "skipped": total["skipped"],
          "seconds": seconds, "files": {k: dict(v) for k, v in sorted(files_out.items())},
          "failures": failures}


def _print(selection: str, results: dict[str, dict]):
  names = list(results)
  baseline = results.get("numpy-native")
  rows = []
  for name, r in results.items():
    delta = "" if baseline is None else r["passed"] - baseline["passed"]
    rows.append((name, r["passed"], r["failed"], r["skipped"], delta, round(r["seconds"])))
  timing.emit(f"array-api-tests {VERSION}, {selection}: per namespace",
              ("namespace", "passed", "failed", "skipped", "vs numpy-native", "seconds"),
              rows, None)
  files = sorted({f for r in results.values() for f in r["files"]})
  rows = []
  for f in files:
    cells = [results[n]["files"].get(f, {}) for n in names]
    rows.append((f, *(f'{c.get("passed", 0)}/{c.get("failed", 0)}' for c in cells),
                 *(round(c.get("seconds", 0.0), 1) for c in cells)))
  timing.emit(f"\nper test file (passed/failed, then seconds), {selection}",
              ("file", *names, *(f"s {n}" for n in names)), rows, None)


def _versions(suite: str) -> dict[str, str]:
  """The libraries under test and the suite's commit, read without importing them."""
  found = {}
  for package in ("numpy", "jax", "tensorflow", "hypothesis"):
    try:
      found[package] = metadata.version(package)
    except metadata.PackageNotFoundError:
      pass
  for name, folder in (("array-api-tests", suite), ("array-api", f"{suite}/array-api")):
    done = subprocess.run(["git", "-C", folder, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    found[name] = done.stdout.strip() or "unknown"
  return found


def run(suite: str, namespaces: Sequence[str], selections: Sequence[str], *,
        max_examples: int, files: Sequence[str] = (), keyword: str | None = None,
        timeout_s: int = 1800, json_path: str | None = None) -> dict:
  """Runs every (selection, namespace); prints the tables; returns (and writes) the results."""
  results = {}
  for selection in selections:
    results[selection] = {}
    for namespace in namespaces:
      print(f"running {namespace} ({selection})...", flush=True)
      results[selection][namespace] = run_suite(
          suite, namespace, selection, max_examples=max_examples, files=files,
          keyword=keyword, timeout_s=timeout_s)
    _print(selection, results[selection])
  payload = {"title": f"array-api-tests {VERSION} per namespace",
             "settings": {"max_examples": max_examples, "files": list(files),
                          "keyword": keyword, "selections": SELECTIONS},
             "versions": _versions(suite),
             "results": results}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def main(argv: Sequence[str]):
  del argv
  unknown = sorted(set(FLAGS.namespaces) - set(NAMESPACES))
  if unknown or not set(FLAGS.selections) <= set(SELECTIONS):
    raise app.UsageError(f"--namespaces from {list(NAMESPACES)}, --selections from "
                         f"{list(SELECTIONS)}")
  run(FLAGS.suite, FLAGS.namespaces, FLAGS.selections, max_examples=FLAGS.max_examples,
      files=FLAGS.files, keyword=FLAGS.keyword, timeout_s=FLAGS.timeout_s,
      json_path=FLAGS.json)


if __name__ == "__main__":
  define_flags()
  flags.mark_flag_as_required("suite")
  app.run(main)
