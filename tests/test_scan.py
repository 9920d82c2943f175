"""crossgrad.scan on files written like the seeds (tests/testdata/legacy_*.py)."""

import pathlib
import subprocess
import sys

from crossgrad import scan

TESTDATA = pathlib.Path(__file__).parent / "testdata"

# Read off the fixtures by hand: (line, kind) of every override construct.
EXPECTED = {
    "legacy_add.py": [(12, "RegisterGradient"), (13, "gradient_override_map"),
                      (14, "py_func under override"), (32, "py_func with grad")],
    "legacy_square_cube.py": [(10, "RegisterGradient"), (12, "gradient_override_map"),
                              (13, "py_func under override"), (23, "py_func with grad"),
                              (36, "py_func with grad")],
    "legacy_tf2_styles.py": [(8, "RegisterGradient"),
                             (15, "numpy_function in custom_gradient"),
                             (31, "Defun python_grad_func")],
    "legacy_py2.py": [(7, "RegisterGradient"), (9, "gradient_override_map"),
                      (10, "py_func under override"), (18, "py_func with grad")],
}


def test_each_fixture_lists_exactly_its_overrides():
  for name, expected in EXPECTED.items():
    found = scan.scan_file(str(TESTDATA / name))
    assert [(f.line, f.kind) for f in found] == expected, name
    assert all(f.parsed == (name != "legacy_py2.py") for f in found), name
    assert all(f.replacement.startswith("crossgrad.tf1.") for f in found)


def test_the_seed_cube_grads_inner_py_func_without_grad_is_not_listed():
  lines = (TESTDATA / "legacy_square_cube.py").read_text().splitlines()
  inner = next(i for i, line in enumerate(lines, 1) if "cube_x_grad = py_func" in line)
  assert inner not in [f.line for f in scan.scan_file(str(TESTDATA / "legacy_square_cube.py"))]


def test_command_line_scans_a_tree(tmp_path):
  out = tmp_path / "findings.json"
  result = subprocess.run(
      [sys.executable, "-m", "crossgrad.scan", str(TESTDATA), f"--json={out}"],
      capture_output=True, text=True, check=False, timeout=60)
  assert result.returncode == 0, result.stderr
  total = sum(map(len, EXPECTED.values()))
  assert f"{total} findings in 4 files (1 read with the regex fallback)" in result.stdout
  assert "legacy_add.py:32: py_func with grad" in result.stdout
  assert out.read_text().count('"kind"') == total


def test_command_line_rejects_a_missing_path(tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "crossgrad.scan", str(tmp_path / "nope")],
      capture_output=True, text=True, check=False, timeout=60)
  assert result.returncode == 2 and "no such file" in result.stderr
