"""`python -m crossgrad.check`: exit status 0 only if every check passes."""

import json
import subprocess
import sys
import textwrap

from absl import flags
from absl.testing import flagsaver
import pytest

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.checker import main


def _check(*args, env_path=None):
  env = None
  if env_path is not None:
    import os  # pylint: disable=g-import-not-at-top
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(env_path)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
  return subprocess.run([sys.executable, "-m", "crossgrad.check", *args], capture_output=True,
                        text=True, timeout=600, env=env)


def test_user_module_passes_and_writes_json(tmp_path):
  out = tmp_path / "report.json"
  # Eager only: the module's op reaches every backend; modes are the engine's, checked
  # in-process elsewhere.
  result = _check("--module=crossgrad.examples.my_ops", "--ops=clipped_ste", "--modes=eager",
                  f"--json={out}")
  assert result.returncode == 0, result.stdout + result.stderr
  report = json.loads(out.read_text())
  assert report["ok"] and {r["backend"] for r in report["rows"]} == {
      "numpy", *base.default_backends()}  # torch too, where installed.
  assert {r["op"] for r in report["rows"]} == {"clipped_ste"}
  assert "clipped_ste" in result.stderr  # Progress lines.


def test_planted_wrong_gradient_exits_non_zero(tmp_path):
  (tmp_path / "planted_ops.py").write_text(textwrap.dedent("""
      import crossgrad as cg
      cg.register(cg.OpDef(
          "planted_square", lambda xp, x: (x * x, (x,)),
          lambda xp, r, g: (g * r[0],),  # Should be 2 * x * g.
          sample=lambda rng: (rng.standard_normal(5),)))
  """))
  result = _check("--module=planted_ops", "--ops=planted_square", "--backends=jax",
                  env_path=tmp_path)
  assert result.returncode == 1
  grid, rows = result.stdout.split("failing rows by cause (1 cause):")
  # One cause: the backward is half the derivative, on the line that returns it.
  assert "1. planted_square -: scale at " in rows and "planted_ops.py:5 (10 rows)" in rows
  assert "the cotangent of x is 0.5 times the derivative of the forward" in rows
  # The reference's block, then JAX's (eager and jit: the transposed backward).
  reference, jax_cell = [line for line in grid.splitlines() if "FAIL" in line]
  assert reference.split()[:3] == ["planted_square", "-", "FAIL"]
  assert jax_cell.split()[2::2][:2] == ["FAIL", "FAIL"]
  failing = [line for line in rows.splitlines() if "FAIL" in line]
  assert all("planted_square" in line for line in failing)
  # The reference's finite differences, on the sample and on its variants (a batch of 1,
  # a leading axis of 1 and of 2, x10, x100), and JAX's forward mode (the transposed
  # backward).
  assert [" fd " in line for line in failing].count(True) == 1
  assert sum(" variant " in line and " numpy " in line for line in failing) == 5
  assert sum(" jvp " in line for line in failing) == len(failing) - 6 == 4
  assert "every row:" not in result.stdout


def test_bad_flags_exit_2_with_one_line_and_no_traceback():
  result = _check("--modes=jitt", "--backends=jax")
  assert result.returncode == 2
  (line,) = [l for l in result.stderr.splitlines() if l.startswith("[crossgrad]")]
  assert line == ("[crossgrad] --modes: unknown value: expected one of eager, jit, export, vmap, "
                  "scan, checkpoint, batched_vjp, got 'jitt'. "
                  "Did you mean 'jit'?")
  assert "Traceback" not in result.stderr


def _main(capsys, **flag_values):
  """Runs the binary's main in this process; returns (exit status, stderr lines)."""
  flags.FLAGS.mark_as_parsed()  # Defaults, as a command line without flags gives.
  # In this process (not --jobs), writing no compile cache (nor its summary line).
  with flagsaver.flagsaver(**{"jobs": 1, "compile_cache": False, **flag_values}):
    status = main.main(["crossgrad-check"])
  return status, [l for l in capsys.readouterr().err.splitlines() if l.startswith("[crossgrad]")]


@pytest.mark.parametrize("flag_values, message", [
    (dict(ops=["no_such_op"]), "--ops: unknown value: expected one of bernoulli_mask, "),
    (dict(backends=["theano"]), "--backends: unknown value: expected one of numpy, "
                                "tensorflow, jax, torch, got 'theano'"),
    (dict(dtypes=["float31"]), "--dtypes: unknown value: expected one of float16, bfloat16, "
                               "float32, float64, got 'float31'. Did you mean 'float32'?"),
    (dict(devices=["gpu:77"]), "--devices: unknown value: expected one of all, cpu, "),
    (dict(modes=["graph"], backends=["jax"]), "--modes: unknown value: expected one of eager, "
                                              "jit, export, vmap, scan, checkpoint, "
                                              "batched_vjp, got "
                                              "'graph'"),
    (dict(tolerance="exact"), "--tolerance: unknown tolerance: expected 'default', 'bitwise' "
                              "or a finite number >= 0, got 'exact'"),
    (dict(special="lenient"), "--special: unknown special-values policy: expected "
                              "'advisory' (default), 'strict' or 'off', got 'lenient'"),
    (dict(precision="tf32"), "--precision: unknown value: expected one of highest, "
                             "framework, got 'tf32'"),
    (dict(ops=[]), "--ops: nothing to check: no op selected"),
    (dict(modes=[]), "--modes: nothing to check: no mode selected"),
    (dict(dtypes=[]), "--dtypes: nothing to check: no dtype selected"),
    (dict(ops=["custom_add"], backends=[]), "--ops: nothing to check: every row is skipped "
                                            "or informational"),
    (dict(module=["no_such_module_anywhere"]), "--module: no such module: expected a dotted "
                                               "module name on sys.path or a .py path"),
    (dict(module=["missing/ops.py"]), "--module: no such file"),
])
def test_each_bad_selection_names_the_flag_the_value_and_the_valid_ones(capsys, flag_values,
                                                                        message):
  status, lines = _main(capsys, **flag_values)
  assert status == 2
  assert len(lines) == 1 and lines[0].startswith("[crossgrad] " + message), lines
  if "devices" in flag_values:
    assert "cpu:0" in lines[0] and lines[0].endswith("got 'gpu:77'")


def test_module_takes_a_file_path(tmp_path, capsys):
  path = tmp_path / "path_ops.py"
  path.write_text(textwrap.dedent("""
      import crossgrad as cg
      cg.register(cg.OpDef(
          "t_path_op", lambda xp, x: (3.0 * x, ()), lambda xp, r, g: (3.0 * g,),
          sample=lambda rng: (rng.standard_normal(4),)))
  """))
  try:
    status, lines = _main(capsys, module=[str(path)], ops=["t_path_op"], backends=["jax"],
                          modes=["eager"], dtypes=["float64"])
  finally:
    cg.unregister("t_path_op")
  assert status == 0 and not lines


def test_bitwise_tolerance_names_what_differs(tmp_path):
  (tmp_path / "div_ops.py").write_text(textwrap.dedent("""
      import crossgrad as cg
      cg.register(cg.OpDef(
          "t_div15", lambda xp, x: (x / 15.0, ()), lambda xp, r, g: (g / 15.0,),
          sample=lambda rng: (rng.standard_normal(64),)))
  """))
  args = (f"--module={tmp_path / 'div_ops.py'}", "--ops=t_div15", "--backends=jax",
          "--dtypes=float32", "--modes=jit", "--special=false", "--all_rows=false")
  assert _check(*args).returncode == 0  # 1-ulp differences pass the relative tolerance.
  result = _check(*args, "--tolerance=bitwise")
  assert result.returncode == 1
  failing = [line for line in result.stdout.splitlines() if "FAIL" in line]
  # XLA computes x / 15 as x * (1 / 15): one ulp off for some x.
  assert any(" forward " in line and "output 0[" in line and "(1 ulps)" in line
             for line in failing), failing


def test_frameworks_share_an_accelerator_unless_the_user_chose(tmp_path):
  """JAX's default (75% of a GPU at start) and TensorFlow's (all of it) would leave the
  next framework or job on that GPU without memory: the check turns both off before any
  module or framework loads, and leaves a value the user set."""
  import os  # pylint: disable=g-import-not-at-top
  seen = tmp_path / "seen.json"
  (tmp_path / "env_probe.py").write_text(textwrap.dedent(f"""
      import json, os
      names = ("XLA_PYTHON_CLIENT_PREALLOCATE", "TF_FORCE_GPU_ALLOW_GROWTH")
      with open({str(seen)!r}, "w") as f:
        json.dump({{n: os.environ.get(n) for n in names}}, f)
      """))
  env = {k: v for k, v in os.environ.items() if k not in main.SHARED_ACCELERATOR_ENV}
  for user_value, expected in ((None, "false"), ("true", "true")):
    if user_value is not None:
      env["XLA_PYTHON_CLIENT_PREALLOCATE"] = user_value
    result = subprocess.run(
        [sys.executable, "-m", "crossgrad.check", f"--module={tmp_path / 'env_probe.py'}",
         "--list"], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(seen.read_text()) == {"XLA_PYTHON_CLIENT_PREALLOCATE": expected,
                                           "TF_FORCE_GPU_ALLOW_GROWTH": "true"}
