"""crossgrad.tf1.scan on files written like the seeds and TF1 projects (tests/testdata/*.py)."""

import pathlib
import subprocess
import sys

from crossgrad.tf1 import scan

TESTDATA = pathlib.Path(__file__).parent / "testdata"
_PYFUNC_HELPER = [(10, "RegisterGradient"), (12, "gradient_override_map"),
                  (13, "py_func under override")]

# Read off the fixtures by hand: (line, kind) of every override construct.
EXPECTED = {
    "legacy_add.py": [(12, "RegisterGradient"), (13, "gradient_override_map"),
                      (14, "py_func under override"), (32, "py_func with grad")],
    "legacy_square_cube.py": _PYFUNC_HELPER + [(23, "py_func with grad"),
                                               (36, "py_func with grad")],
    "legacy_tf2_styles.py": [(8, "RegisterGradient"),
                             (15, "numpy_function in custom_gradient"),
                             (31, "Defun python_grad_func")],
    "legacy_py2.py": [(7, "RegisterGradient"), (9, "gradient_override_map"),
                      (10, "py_func under override"), (18, "py_func with grad")],
    "legacy_binarized.py": [(10, "op type override")],
    "legacy_dorefa.py": [(12, "op type override"), (20, "op type override")],
    "legacy_ste_ops.py": [(7, "RegisterGradient"), (13, "RegisterGradient"),
                          (19, "gradient_override_map")],
    "legacy_guided_backprop.py": [(10, "RegisterGradient"), (32, "op type override")],
    "legacy_flip_gradient.py": [(15, "RegisterGradient"), (20, "op type override"),
                                (30, "RegisterGradient"), (36, "op type override")],
    "legacy_defun.py": [(13, "Defun python_grad_func"), (23, "Defun python_grad_func")],
    "legacy_two_outputs.py": _PYFUNC_HELPER + [(27, "py_func with grad")],
    "legacy_float64_nested.py": _PYFUNC_HELPER + [(31, "py_func with grad")],
    "legacy_int_inputs.py": _PYFUNC_HELPER + [(26, "py_func with grad")],
    "legacy_renamed_helper.py": [(10, "RegisterGradient"), (11, "gradient_override_map"),
                                 (12, "py_func under override"), (24, "helper with grad"),
                                 (28, "helper with grad")],
    "legacy_migrated.py": [(16, "migrated"), (20, "migrated"), (24, "migrated"),
                           (29, "migrated")],
    "legacy_port_check.py": [],
    "legacy_diverging.py": [],
    "keras_planted_op.py": [],  # tests/test_keras.py's fixture: no TF1 override in it.
    # The upgrade's fixtures (tests/test_tf1_upgrade.py).
    "upgrade_py_funcs.py": [(18, "RegisterGradient"), (19, "gradient_override_map"),
                            (20, "py_func under override"), (25, "RegisterGradient"),
                            (27, "gradient_override_map"), (28, "py_func under override"),
                            (34, "RegisterGradient"), (35, "gradient_override_map"),
                            (37, "py_func under override"), (58, "py_func with grad"),
                            (62, "helper with grad"), (71, "py_func with grad"),
                            (82, "RegisterGradient"), (86, "gradient_override_map"),
                            (87, "py_func under override")],
    "upgrade_registered.py": [(10, "RegisterGradient"), (15, "RegisterGradient"),
                              (21, "gradient_override_map"), (22, "py_func under override"),
                              (27, "op type override"), (35, "Defun python_grad_func"),
                              (49, "RegisterGradient"), (54, "op type override"),
                              (63, "RegisterGradient"), (77, "op type override")],
    "upgrade_left.py": [(9, "gradient_override_map"), (14, "gradient_override_map"),
                        (19, "gradient_override_map"), (20, "py_func under override"),
                        (27, "Defun python_grad_func")],
}


def test_each_fixture_lists_exactly_its_overrides():
  assert sorted(EXPECTED) == sorted(p.name for p in TESTDATA.glob("*.py"))
  for name, expected in EXPECTED.items():
    found = scan.scan_file(str(TESTDATA / name))
    assert [(f.line, f.kind) for f in found] == expected, name
    assert all(f.parsed == (name != "legacy_py2.py") for f in found), name
    assert all(f.replacement.startswith("crossgrad.tf1.") or f.migrated for f in found)


def test_op_type_overrides_name_their_types_and_point_at_override_map():
  (rounding, bwn) = scan.scan_file(str(TESTDATA / "legacy_dorefa.py"))
  assert (rounding.detail, bwn.detail) == ("Round", "Sign, Mul")
  assert bwn.replacement.startswith("crossgrad.tf1.override_map")


def test_migrated_calls_name_the_entry_point_and_are_not_to_port():
  found = scan.scan_file(str(TESTDATA / "legacy_migrated.py"))
  assert [f.detail for f in found] == ["crossgrad.tf1.py_func", "crossgrad.tf1.py_func",
                                       "crossgrad.tf1.override_map", "crossgrad.tf1.port"]
  assert all(f.migrated for f in found)


def test_a_helper_defined_in_another_file_is_recognized(tmp_path):
  (tmp_path / "ops_util.py").write_text(
      (TESTDATA / "legacy_renamed_helper.py").read_text())
  (tmp_path / "model.py").write_text(
      "from ops_util import numpy_op\n\n\ndef layer(x, f, g):\n"
      "  return numpy_op(f, [x], [x.dtype], grad=g)\n")
  calls = [f for f in scan.scan(str(tmp_path)) if f.path.endswith("model.py")]
  assert [(f.line, f.kind, f.detail) for f in calls] == [(5, "helper with grad", "numpy_op")]
  assert scan.scan_file(str(tmp_path / "model.py")) == []  # Alone, numpy_op is unknown.


def test_the_seed_cube_grads_inner_py_func_without_grad_is_not_listed():
  lines = (TESTDATA / "legacy_square_cube.py").read_text().splitlines()
  inner = next(i for i, line in enumerate(lines, 1) if "cube_x_grad = py_func" in line)
  assert inner not in [f.line for f in scan.scan_file(str(TESTDATA / "legacy_square_cube.py"))]


def test_command_line_scans_a_tree(tmp_path):
  out = tmp_path / "findings.json"
  result = subprocess.run(
      [sys.executable, "-m", "crossgrad.tf1.scan", str(TESTDATA), f"--json={out}"],
      capture_output=True, text=True, check=False, timeout=60)
  assert result.returncode == 0, result.stderr
  total = sum(map(len, EXPECTED.values()))
  files = sum(1 for name, found in EXPECTED.items() if name != "legacy_migrated.py" and found)
  assert (f"{total - 4} to port in {files} files, 4 calls already migrated to crossgrad.tf1 "
          "(1 files read with the regex fallback)") in result.stdout
  assert "legacy_add.py:32: py_func with grad" in result.stdout
  assert out.read_text().count('"kind"') == total
  assert out.read_text().count('"status": "migrated"') == 4


def test_scanning_imports_no_tensorflow():
  """The scanner reads crossgrad.tf1's op types without importing TensorFlow (the package
  loads it only for the names that need it), so it runs where TensorFlow is absent."""
  code = ("import sys\nfrom crossgrad.tf1 import scan\n"
          "print(len(scan.scan_file(sys.argv[1])), 'tensorflow' in sys.modules)")
  result = subprocess.run([sys.executable, "-c", code, str(TESTDATA / "legacy_add.py")],
                          capture_output=True, text=True, check=False, timeout=60)
  assert result.returncode == 0, result.stderr
  assert result.stdout.split() == [str(len(EXPECTED["legacy_add.py"])), "False"]


def test_command_line_rejects_a_missing_path(tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "crossgrad.tf1.scan", str(tmp_path / "nope")],
      capture_output=True, text=True, check=False, timeout=60)
  assert result.returncode == 2 and "no such file" in result.stderr
