r"""Array API conformance of each backend's ``xp``, next to NumPy's own namespace.

  python -m crossgrad.benchmarks.array_api_conformance --suite=/path/to/array-api-tests

Runs the standard's own test suite (data-apis/array-api-tests, with the specification
data-apis/array-api checked out as its ``array-api/`` folder; not part of crossgrad) once
per namespace, on the same settings: ``ARRAY_API_TESTS_VERSION=2024.12``, the fft
extension disabled, Hypothesis derandomized with ``--max_examples`` examples per test
(so every namespace sees the same inputs), no deadline, no shrinking (``--shrink`` for it),
64-bit JAX. Two selections are
reported apart: the functions (the suite without the array-object tests: what crossgrad
controls) and the array object (the frameworks' own array types, which crossgrad never
patches). Within the functions, the operator parametrisations (test ids naming a dunder
method, ``test_add[__add__(x1, x2)]``: the array type's operators) are also counted apart.

TensorFlow's row is measured twice: strict, and "shapes as tuples", with the test-side plugin
``array_api_tensorshape_plugin`` (``tf.Tensor.shape`` is a ``tf.TensorShape``, which the suite's
tools ndindex and Hypothesis refuse; the plugin converts it to a tuple there, touching neither
TensorFlow nor the namespace). Prints passed/failed per namespace and per test file, and writes
everything (with each failure's message) as JSON.
"""

from __future__ import annotations

import collections
from importlib import metadata
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from absl import app
from absl import flags

from crossgrad.benchmarks import array_api_modes
from crossgrad.benchmarks import timing
from crossgrad.cli import usage

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
    "torch": "exec('import crossgrad; xp = crossgrad.torch.xp')",
    # What an op's body sees in TensorFlow: xp taking and giving the standard's array object.
    "tensorflow-array": "exec('import crossgrad; crossgrad.tensorflow.xp; "
                        "from crossgrad.backends.tensorflow import array_object; "
                        "xp = array_object.body_namespace()')",
    # What an op's body sees in torch and JAX (backends/torch/array_object.py,
    # backends/jax/array_object.py).
    "torch-array": "exec('import crossgrad; crossgrad.torch.xp; "
                   "from crossgrad.backends.torch import array_object as torch_array_object; "
                   "xp = torch_array_object.body_namespace()')",
    "jax-array": "exec('import crossgrad; crossgrad.jax.xp; "
                 "from crossgrad.backends.jax import array_object as jax_array_object; "
                 "xp = jax_array_object.body_namespace()')",
    # No data-dependent shapes (a compiled mode's selection): NumPy's own, the baseline.
    "numpy-native-static": "numpy",
}
# Each backend's xp with every call run compiled or vmapped (benchmarks/array_api_modes.py).
NAMESPACES.update({
    f"{backend}-{mode}": "exec('from crossgrad.benchmarks import array_api_modes as m; "
                         f'xp = m.namespace("{backend}", "{mode}")\')'
    for backend, modes in array_api_modes.MODES.items() for mode in modes})
# Run with --disable-data-dependent-shapes: a compiled function's shapes are fixed.
STATIC = {"numpy-native-static", "jax-jit", "tensorflow-xla", "torch-compile"}

# Namespaces measured a second time with a test-side plugin (the row's name, the plugin).
TENSORSHAPE_PLUGIN = "crossgrad.benchmarks.array_api_tensorshape_plugin"
TUPLE_SHAPES = {"tensorflow": ("tensorflow (shapes as tuples)", TENSORSHAPE_PLUGIN)}
# TensorFlow's modes are measured with shapes as tuples only (their strict failures are the
# eager row's: tf.TensorShape in the suite's tools).
ALWAYS_PLUGINS = {"tensorflow-xla": (TENSORSHAPE_PLUGIN,),
                  "tensorflow-vmap": (TENSORSHAPE_PLUGIN,)}
# A test id parametrised by a dunder method of the array: `test_add[__add__(x1, x2)]`,
# `test_binary[__mod__(x1_i is +0 ...)]` (not `__array_namespace_info__`, a function).
OPERATOR = re.compile(r"\[__(?!array_namespace_info__)[a-z]+__")

NO_SHRINK = "crossgrad.benchmarks.array_api_no_shrink_plugin"

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
  flags.DEFINE_bool("shrink", False, "Let Hypothesis shrink failing examples (simpler failure "
                    "messages, same outcomes, much slower where many tests fail).")
  flags.DEFINE_bool("tuple_shapes", True, "Also measure " + ", ".join(TUPLE_SHAPES) +
                    " with tf.TensorShape read as tuples by the suite's tools (a test-side "
                    "plugin; a second row).")
  flags.DEFINE_string("json", "out/array_api_conformance.json", "Where to write JSON.")
  flags.DEFINE_string("torch_compile_backend", "inductor", "torch.compile's backend in "
                      "torch-compile (aot_eager: the same fullgraph trace, no code generation).")


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
  env.setdefault(array_api_modes.COMPILE_BACKEND, "inductor")
  return env


def run_suite(suite: str, namespace: str, selection: str, *, max_examples: int,
              files: Sequence[str] = (), keyword: str | None = None,
              timeout_s: int = 1800, plugins: Sequence[str] = (),
              shrink: bool = False) -> dict:
  """One pytest run of the suite for ``namespace`` (with the pytest ``plugins``): counts and
  seconds per test file, counts of the operator parametrisations, every failure's message."""
  suite_path = pathlib.Path(suite).resolve()
  _check_suite(suite_path)
  expression = SELECTIONS[selection] + (f" and ({keyword})" if keyword else "")
  targets = [f"array_api_tests/{f}" for f in files] or ["array_api_tests"]
  plugins = (*plugins, *ALWAYS_PLUGINS.get(namespace, ()))
  if not shrink:
    plugins = (*plugins, NO_SHRINK)
  static = ("--disable-data-dependent-shapes",) if namespace in STATIC else ()
  with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "report.json")
    command = [sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider",
               *(a for p in plugins for a in ("-p", p)),
               "--disable-extension", "fft", *static, f"--max-examples={max_examples}",
               "--derandomize", "--disable-deadline", "-k", expression, "--json-report",
               f"--json-report-file={report}", "--json-report-omit", "collectors", "log",
               "streams", "traceback"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=suite_path, env=_environ(namespace), timeout=timeout_s,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1) or not os.path.exists(report):  # 1: some tests failed.
      raise RuntimeError(f"{namespace}: the suite did not run:\n{done.stdout[-3000:]}"
                         f"\n{done.stderr[-3000:]}")
    with open(report) as f:
      tests = json.load(f)["tests"]
  files_out = collections.defaultdict(collections.Counter)
  operators = collections.Counter()
  failures = []
  for test in tests:
    name = test["nodeid"].split("::")[0].rsplit("/", 1)[-1]
    outcome = "failed" if test["outcome"] == "error" else test["outcome"]
    files_out[name][outcome] += 1
    if OPERATOR.search(test["nodeid"]):
      operators[outcome] += 1
    files_out[name]["seconds"] += sum(test.get(s, {}).get("duration", 0.0)
                                      for s in ("setup", "call", "teardown"))
    if outcome == "failed":
      phase = test.get("call") or test.get("setup") or {}
      message = phase.get("crash", {}).get("message", phase.get("longrepr", ""))
      failures.append({"test": test["nodeid"], "message": message.split("\n")[0][:300]})
  total = sum(files_out.values(), collections.Counter())
  return {"passed": total["passed"], "failed": total["failed"], "skipped": total["skipped"],
          "operators": {k: operators[k] for k in ("passed", "failed", "skipped")},
          "seconds": seconds, "files": {k: dict(v) for k, v in sorted(files_out.items())},
          "failures": failures}


def _print(selection: str, results: dict[str, dict]):
  names = list(results)
  rows = []
  for name, r in results.items():
    # A compiled mode's selection (no data-dependent shapes) against NumPy's on the same.
    baseline = results.get("numpy-native-static" if name in STATIC else "numpy-native")
    delta = "" if baseline is None else r["passed"] - baseline["passed"]
    ops = r["operators"]
    rows.append((name, r["passed"], r["failed"], r["skipped"], delta,
                 f'{r["passed"] - ops["passed"]}/{r["failed"] - ops["failed"]}',
                 f'{ops["passed"]}/{ops["failed"]}', round(r["seconds"])))
  timing.emit(f"array-api-tests {VERSION}, {selection}: per namespace",
              ("namespace", "passed", "failed", "skipped", "vs numpy-native (-static)",
               "without operators: passed/failed", "operators (array object): passed/failed",
               "seconds"), rows, None)
  adapted = [row for row, _ in TUPLE_SHAPES.values() if row in results]
  if adapted:
    print(f"{', '.join(adapted)}: the suite's tools (ndindex, Hypothesis) read tf.TensorShape "
          "as a tuple (test-side plugin array_api_tensorshape_plugin; TensorFlow and the "
          "namespace untouched).")
  print("operators: test ids naming a dunder method (test_add[__add__(x1, x2)]), the array "
        "type's own operators, which crossgrad never patches.")
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
        timeout_s: int = 1800, tuple_shapes: bool = True, shrink: bool = False,
        json_path: str | None = None) -> dict:
  """Runs every (selection, namespace); prints the tables; returns (and writes) the results.
  With ``tuple_shapes``, a namespace in TUPLE_SHAPES gets a second row run with its plugin."""
  results = {}
  for selection in selections:
    results[selection] = {}
    for namespace in namespaces:
      rows = [(namespace, ())]
      if tuple_shapes and namespace in TUPLE_SHAPES:
        row, plugin = TUPLE_SHAPES[namespace]
        rows.append((row, (plugin,)))
      for row, plugins in rows:
        print(f"running {row} ({selection})...", flush=True)
        results[selection][row] = run_suite(
            suite, namespace, selection, max_examples=max_examples, files=files,
            keyword=keyword, timeout_s=timeout_s, plugins=plugins, shrink=shrink)
    _print(selection, results[selection])
  payload = {"title": f"array-api-tests {VERSION} per namespace",
             "settings": {"max_examples": max_examples, "files": list(files),
                          "keyword": keyword, "selections": SELECTIONS,
                          "tuple_shapes": {row: plugin for row, plugin in TUPLE_SHAPES.values()}
                                          if tuple_shapes else {},
                          "operators": OPERATOR.pattern, "shrink": shrink,
                          "torch_compile_backend": os.environ.get(
                              array_api_modes.COMPILE_BACKEND, "inductor")},
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
  os.environ[array_api_modes.COMPILE_BACKEND] = FLAGS.torch_compile_backend
  run(FLAGS.suite, FLAGS.namespaces, FLAGS.selections, max_examples=FLAGS.max_examples,
      files=FLAGS.files, keyword=FLAGS.keyword, timeout_s=FLAGS.timeout_s,
      tuple_shapes=FLAGS.tuple_shapes, shrink=FLAGS.shrink, json_path=FLAGS.json)


if __name__ == "__main__":
  define_flags()
  flags.mark_flag_as_required("suite")
  usage.run(main)
