"""`crossgrad.testing.assert_cross_check` and the pytest plugin (``pytest --crossgrad=...``)."""

import importlib
import os
import pathlib
import subprocess
import sys
import tomllib

import pytest

import crossgrad as cg
from crossgrad import testing

ROOT = pathlib.Path(__file__).resolve().parent.parent
_OPS = '''
import crossgrad as cg

def forward(xp, x):
  return 3.0 * x, ()

def good_backward(xp, residuals, g):
  return (3.0 * g,)

def bad_backward(xp, residuals, g):
  return (2.0 * g,)  # planted: the derivative is 3

def sample(rng):
  return (rng.standard_normal(4),)

cg.register(cg.OpDef("pt_good", forward, good_backward, sample=sample))
cg.register(cg.OpDef("pt_bad", forward, bad_backward, sample=sample))
'''
_PLANTED_LINE = _OPS.splitlines().index("  return (2.0 * g,)  # planted: the derivative is 3") + 1


def _op(backward):
  return cg.OpDef("pt_inline", lambda xp, x: (3.0 * x, ()), backward,
                  sample=lambda rng: (rng.standard_normal(4),))


def test_assert_cross_check_returns_the_report_of_a_correct_op():
  report = testing.assert_cross_check(_op(lambda xp, r, g: (3.0 * g,)), backends=[])
  assert report.ok and {r.op for r in report.rows} == {"pt_inline"}


def test_assert_cross_check_raises_with_the_cause_and_its_line():
  def backward(xp, residuals, g):
    return (2.0 * g,)  # planted: the derivative is 3
  with pytest.raises(AssertionError) as raised:
    testing.assert_cross_check(_op(backward), backends=[])
  text = str(raised.value)
  assert "failing rows by cause (1 cause):" in text
  assert f"scale at {__file__}:{backward.__code__.co_firstlineno + 1}" in text
  assert "remove the factor 0.666667" in text  # 2 / 3, the planted factor.
  # fd, and the variants (a batch of 1, a leading axis of 1 and of 2, x10, x100): one cause.
  assert "6 failing" in text.splitlines()[-1]


def test_the_plugin_collects_one_item_per_op_failing_with_the_causes(tmp_path):
  (tmp_path / "pt_ops.py").write_text(_OPS)
  result = subprocess.run(
      [sys.executable, "-m", "pytest", "-p", "crossgrad.testing.pytest_plugin",
       "--crossgrad=pt_ops.py", "--crossgrad-backends=", "--crossgrad-dtypes=float32", "-v",
       "-p", "no:cacheprovider"],
      cwd=tmp_path, capture_output=True, text=True, timeout=300,
      env={**os.environ, "PYTEST_ADDOPTS": ""})
  out = result.stdout
  assert result.returncode == 1, out + result.stderr
  assert "pt_ops.py::crossgrad[pt_good] PASSED" in out
  assert "pt_ops.py::crossgrad[pt_bad] FAILED" in out
  assert f"scale at {tmp_path / 'pt_ops.py'}:{_PLANTED_LINE}" in out
  assert "remove the factor 0.666667" in out
  assert "1 failed, 1 passed" in out


def test_the_plugin_is_declared_as_a_pytest11_entry_point():
  project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
  entry = project["entry-points"]["pytest11"]
  assert entry == {"crossgrad.testing.pytest_plugin": "crossgrad.testing.pytest_plugin"}
  plugin = importlib.import_module(entry["crossgrad.testing.pytest_plugin"])
  assert callable(plugin.pytest_addoption) and callable(plugin.pytest_collect_file)
