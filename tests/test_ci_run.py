""".ci/run stops at the first README command that fails, wherever in its && chain it fails."""

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _run_ci(tmp_path, first, second):
  """Runs a copy of .ci/run in a tree whose README holds the two commands ``first``, ``second``."""
  (tmp_path / ".ci").mkdir()
  shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
  (tmp_path / "README.md").write_text(f"# project\n\n```bash\n{first}\n{second}\n```\n")
  return subprocess.run(["bash", str(tmp_path / ".ci" / "run")], cwd=tmp_path,
                        capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("first", [
    "touch venv && false && touch installed && touch checked",  # the install fails
    "touch venv && touch installed && false",                   # the check fails
])
def test_a_failing_step_of_the_first_command_stops_before_the_tests(tmp_path, first):
  done = _run_ci(tmp_path, first, "touch tested")
  assert done.returncode != 0, done.stdout + done.stderr
  assert (tmp_path / "venv").exists()
  assert not (tmp_path / "tested").exists(), "the tests ran after a failed first command"


def test_a_failing_step_of_the_test_command_fails_the_run(tmp_path):
  done = _run_ci(tmp_path, "touch checked", "false && touch tested")
  assert done.returncode != 0, done.stdout + done.stderr
  assert (tmp_path / "checked").exists()


def test_a_line_ending_in_a_backslash_continues_the_command(tmp_path):
  first = "touch venv \\\n  && touch installed \\\n  && touch checked"
  # The second command fails at its end, so the run stops before CI's Bazel step.
  done = _run_ci(tmp_path, first, "touch tested \\\n  && false")
  assert done.returncode != 0, done.stdout + done.stderr
  assert "+ touch venv   && touch installed   && touch checked\n" in done.stdout
  assert all((tmp_path / name).exists() for name in ("venv", "installed", "checked", "tested"))


def test_a_failing_step_of_a_continued_command_stops_before_the_tests(tmp_path):
  done = _run_ci(tmp_path, "touch venv \\\n  && false \\\n  && touch checked", "touch tested")
  assert done.returncode != 0, done.stdout + done.stderr
  assert (tmp_path / "venv").exists() and not (tmp_path / "checked").exists()
  assert not (tmp_path / "tested").exists()
