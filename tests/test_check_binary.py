"""`python -m crossgrad.check`: exit status 0 only if every check passes."""

import json
import subprocess
import sys
import textwrap


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
  result = _check("--module=crossgrad.examples.my_ops", "--ops=clipped_ste", f"--json={out}")
  assert result.returncode == 0, result.stdout + result.stderr
  report = json.loads(out.read_text())
  assert report["ok"] and {r["backend"] for r in report["rows"]} == {"numpy", "tensorflow", "jax"}
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
  grid, rows = result.stdout.split("failing rows:")
  (cell,) = [line for line in grid.splitlines() if "FAIL" in line]  # The reference's column.
  assert cell.split()[:3] == ["planted_square", "-", "FAIL"]
  failing = [line for line in rows.splitlines() if "FAIL" in line]
  assert len(failing) == 1 and "planted_square" in failing[0] and " fd " in failing[0]
  assert "every row:" not in result.stdout


def test_bad_flags_exit_with_a_clear_message():
  result = _check("--ops=no_such_op", "--backends=jax")
  assert result.returncode == 2
  assert "[crossgrad]" in result.stderr and "unknown op" in result.stderr
  result = _check("--backends=theano")
  assert result.returncode == 2 and "unknown backend" in result.stderr
