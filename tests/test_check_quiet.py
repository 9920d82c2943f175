"""The check binary prints no framework start-up noise unless --verbosity asks for it."""

import os
import subprocess
import sys

NOISE = ("absl::InitializeLog", "oneDNN", "Unable to initialize backend", "cuda")


def _check(*args):
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  return subprocess.run([sys.executable, "-m", "crossgrad.check", "--ops=leaky_relu",
                         "--dtypes=float32", "--all_rows=false", *args], capture_output=True,
                        text=True, env=env, check=False)


def test_default_run_is_quiet_and_verbosity_brings_the_messages_back():
  quiet = _check()
  assert quiet.returncode == 0, quiet.stderr
  assert not [word for word in NOISE if word in quiet.stderr + quiet.stdout], quiet.stderr
  assert "leaky_relu alpha=0.2: finite differences" in quiet.stderr  # Progress still shows.
  assert "0 failing" in quiet.stdout
  # The noise is the frameworks' start-up messages: eager rows start every framework.
  loud = _check("--verbosity=0", "--modes=eager")
  assert any(word in loud.stderr for word in NOISE), loud.stderr


def test_errors_still_reach_the_terminal():
  done = _check("--backends=nope")
  assert done.returncode == 2
  assert "[crossgrad] --backends: unknown value" in done.stderr


USER_OPS = '''
import crossgrad as cg
cg.register(cg.OpDef("user_triple", lambda xp, x: (3.0 * x, ()), lambda xp, r, g: (3.0 * g,),
                     sample=lambda rng: (rng.standard_normal(5),)))
'''


def test_a_user_module_checked_in_torch_compile_prints_no_traceback(tmp_path):
  """Inductor pickles its cache key, probing ``crossgrad.torch``: that must neither import
  the API module inside the compiler nor print its ~40-line warning."""
  (tmp_path / "my_user_ops.py").write_text(USER_OPS)
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  done = subprocess.run(
      [sys.executable, "-m", "crossgrad.check", "--module=my_user_ops.py", "--ops=user_triple",
       "--backends=torch", "--modes=eager,compile", "--dtypes=float32"],
      capture_output=True, text=True, env=env, check=False, cwd=tmp_path)
  output = done.stdout + done.stderr
  assert done.returncode == 0, output
  header, line = [l.split() for l in done.stdout.splitlines()
                  if l.startswith(("op ", "user_triple "))]
  assert header[-1] == "compile" and line[-2] == "ok"  # It did compile.
  for word in ("Traceback", "Failed to pickle", "CrossgradError", "Warning", "WARNING"):
    assert word not in output, output


def test_crossgrad_torch_imports_safely_on_first_use_inside_torch_compile():
  """Dynamo tracing a first use of ``crossgrad.torch``: the import (which makes ops) runs
  outside the trace, and the compiled function works, with nothing on stderr."""
  script = (
      "import crossgrad, torch, sys\n"
      "def double(x):\n"
      "  return crossgrad.torch.xp.multiply(x, 2.0) + float(len(crossgrad.torch.NAME))\n"
      "print(torch.compile(double)(torch.ones(2)).tolist())\n"
      "print('imported:', 'crossgrad.api.torch' in sys.modules)\n")
  done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                        check=False)
  assert done.returncode == 0, done.stderr
  assert done.stdout.splitlines() == ["[7.0, 7.0]", "imported: True"], done.stdout
  for word in ("Traceback", "Failed to pickle", "CrossgradError"):
    assert word not in done.stderr, done.stderr
