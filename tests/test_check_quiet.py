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
  assert "leaky_relu alpha=0.2 float32 jax cpu:0 jit" in quiet.stderr  # Progress still shows.
  assert "0 failing" in quiet.stdout
  loud = _check("--verbosity=0")
  assert any(word in loud.stderr for word in NOISE), loud.stderr


def test_errors_still_reach_the_terminal():
  done = _check("--backends=nope")
  assert done.returncode == 2
  assert "[crossgrad] --backends: unknown value" in done.stderr
