"""Every binary exits 2 with one line for bad usage (0: all agree, 1: a mismatch).

absl's own parse errors exit 1, which a CI script reads as a gradient mismatch; every binary
starts through `crossgrad.cli.usage.run`, which makes them exit 2. Each binary runs
with an unknown flag and a malformed value (tests/usage_errors_worker.py: one framework
import for all of them), the check with its own bad values too.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from crossgrad.registry import version

ROOT = pathlib.Path(__file__).resolve().parent.parent
SKIP_DIRS = {".venv", "_build", ".git", "out", "tests"}


def _sources():
  return {p: p.read_text() for p in ROOT.rglob("*.py")
          if not SKIP_DIRS & set(p.relative_to(ROOT).parts)
          and not p.relative_to(ROOT).parts[0].startswith("bazel-")}


# Every program, `python -m crossgrad.<module>` (the check as users run it).
BINARIES = sorted("crossgrad." + ".".join(p.relative_to(ROOT).with_suffix("").parts)
                  for p, text in _sources().items() if re.search(r"usage\.(run|console)\(main", text))
BINARIES = [b.replace("crossgrad.checker.main", "crossgrad.check").removesuffix(".__main__")
            for b in BINARIES]
BAD_FOR_EVERY_BINARY = (["--zz_no_such_flag=1"], ["--verbosity=zz"])
BAD_CHECK = (["--seed=abc"], ["--num_shards=2", "--shard_index=2"], ["--shard_index=1"],
             ["--num_shards=0"], ["--jobs=0"], ["--jobs=2", "--num_shards=2", "--shard_index=0"],
             ["--merge=/no/such/shard.json"],
             ["--jobs=2", "--backends=jax", "--modes=jitt"])  # Each job finds it: one line.
CASES = ([(binary, argv) for binary in BINARIES for argv in BAD_FOR_EVERY_BINARY]
         + [("crossgrad.check", argv) for argv in BAD_CHECK])
GOOD = ("crossgrad.check", ["--list"])
# Asking for help or the version is no usage error: exit status 0 (absl's --help exits 1).
ASKED = [(binary, [flag]) for binary in ("crossgrad", "crossgrad.check",
                                         "crossgrad.examples.simple_network")
         for flag in ("--help", "--helpfull", "--version")]


def test_every_program_starts_through_the_one_helper():
  assert {"crossgrad.check", "crossgrad.tf1.scan", "crossgrad.tf1.port_check",
          "crossgrad.tf1.coverage", "crossgrad.benchmarks.run_all",
          "crossgrad.examples.simple_network", "crossgrad.tools.op_pages"} <= set(BINARIES)
  direct = [str(p.relative_to(ROOT)) for p, text in _sources().items()
            if "app.run(" in text and p.name != "usage.py"]
  assert not direct, f"start these through crossgrad.cli.usage.run: {direct}"


@pytest.fixture(scope="module")
def results():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join(
      [str(ROOT.parent)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
  done = subprocess.run([sys.executable, str(ROOT / "tests" / "usage_errors_worker.py"),
                         json.dumps(CASES + [GOOD] + ASKED)], capture_output=True, text=True, env=env,
                        timeout=900, check=True)
  return {(r["module"], tuple(r["argv"])): r for r in json.loads(done.stdout)}


@pytest.mark.parametrize("binary, argv", CASES)
def test_usage_error_exits_2_with_one_line(results, binary, argv):
  result = results[binary, tuple(argv)]
  lines = [line for line in result["output"].splitlines() if line.strip()]
  assert result["status"] == 2 and len(lines) == 1, result
  flag = argv[-1].split("=")[0].lstrip("-")
  assert lines[0].startswith("[crossgrad] ") and flag in lines[0], result


def test_a_good_command_line_still_runs(results):
  result = results[GOOD[0], tuple(GOOD[1])]
  assert result["status"] == 0 and "leaky_relu" in result["output"], result


@pytest.mark.parametrize("binary, argv", ASKED)
def test_help_and_version_exit_0(results, binary, argv):
  result = results[binary, tuple(argv)]
  assert result["status"] == 0, result
  if argv == ["--version"]:
    # tests/test_wheel.py compares it with the built wheel's metadata.
    assert result["output"] == f"crossgrad {version.__version__}\n", result
  else:
    assert "--[no]version: Prints crossgrad's version" in result["output"], result
