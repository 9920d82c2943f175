"""Compile caches across runs (crossgrad.backends.common.compile_cache): where they live, that a
second run reads them instead of compiling, and that a changed backward is never served
from the cache. Fresh processes, as runs are; about 40 s on two cores (torch.compile)."""

import io
import json
import os
import pathlib
import re
import subprocess
import sys

from crossgrad.backends.common import compile_cache
from crossgrad.checker import jobs
from crossgrad.checker import progress

ENV = compile_cache.ENV


def test_the_directory_is_the_env_var_then_xdg_then_home():
  home = {"HOME": "/h"}
  assert compile_cache.directory({ENV: "/mine", "XDG_CACHE_HOME": "/xdg", **home}) == "/mine"
  assert compile_cache.directory({"XDG_CACHE_HOME": "/xdg", **home}) == "/xdg/crossgrad"
  assert compile_cache.directory(home) == "/h/.cache/crossgrad"
  # The XDG spec: a relative XDG_CACHE_HOME is invalid and ignored; an empty variable is unset.
  assert compile_cache.directory({"XDG_CACHE_HOME": "rel", **home}) == "/h/.cache/crossgrad"
  assert compile_cache.directory({ENV: "", **home}) == "/h/.cache/crossgrad"


def test_a_folder_that_cannot_be_written_leaves_the_backend_uncached(tmp_path):
  blocker = tmp_path / "a_file"
  blocker.write_text("")
  assert compile_cache.configure(str(blocker / "cache"), ["numpy", "jax"]) == {}


def _files(folder: pathlib.Path) -> list[str]:
  return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _check(tmp_path, *flags):
  """The check binary on one op in JAX's jit mode, with every default cache location
  (XDG, the env var) pointed into ``tmp_path``."""
  env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"), **{ENV: str(tmp_path / "env")})
  done = subprocess.run(
      [sys.executable, "-m", "crossgrad.check", "--backends=jax", "--ops=leaky_relu",
       "--dtypes=float32", "--modes=jit", "--special=off", *flags],
      capture_output=True, text=True, env=env, check=False, timeout=300)
  assert done.returncode == 0, done.stdout + done.stderr
  return done.stderr


def _counts(stderr: str, folder: pathlib.Path) -> tuple[int, int]:
  found = re.search(rf"compile cache {re.escape(str(folder))}: jax loaded (\d+) programs, "
                    r"compiled (\d+)", stderr)
  assert found, stderr
  return int(found[1]), int(found[2])



def test_the_summary_line_says_what_it_counts_and_reads_back():
  counts = {"jax": {"hits": 29, "misses": 3}, "torch": {"hits": 2, "misses": 0}}
  line = compile_cache.summary("/c: d", counts)
  assert line == ("[crossgrad] compile cache /c: d: jax loaded 29 programs, compiled 3; "
                  "torch loaded 2, compiled 0")
  assert compile_cache.parse(line + "\n") == ("/c: d", counts)
  assert compile_cache.parse("[crossgrad] shard 0 of 2: 3 of the check's 6 units") is None


def test_jobs_show_one_compile_cache_line_with_their_counts_added():
  lines = jobs._Lines(progress.Progress(()))  # pylint: disable=protected-access
  job_lines = [{"jax": {"hits": 1, "misses": 2}},
               {"jax": {"hits": 4, "misses": 0}, "torch": {"hits": 0, "misses": 5}}]
  for job, counts in enumerate(job_lines):
    lines.forward(io.StringIO(compile_cache.summary("/c", counts) + "\n"), job)
  assert lines.cache_summary() == ("[crossgrad] compile cache /c: jax loaded 5 programs, "
                                   "compiled 2; torch loaded 0, compiled 5")

def test_the_check_binary_caches_in_cache_dir_and_a_second_run_compiles_nothing(tmp_path):
  flag_dir = tmp_path / "flag"
  first = _check(tmp_path, f"--cache_dir={flag_dir}")
  written = _files(flag_dir)
  assert written and all(f.startswith("jax/") for f in written), written
  assert not (tmp_path / "xdg").exists() and not (tmp_path / "env").exists()  # The flag wins.
  hits, misses = _counts(first, flag_dir)
  assert misses == len(written), first  # One entry per compiled program (repeats hit).
  second = _check(tmp_path, f"--cache_dir={flag_dir}")
  assert _counts(second, flag_dir) == (hits + misses, 0), second
  assert _files(flag_dir) == written


def test_nocompile_cache_writes_nothing_anywhere(tmp_path):
  stderr = _check(tmp_path, "--nocompile_cache")
  assert "compile cache" not in stderr
  assert not _files(tmp_path)


# One crossgrad op through the check's own path (the torch backend; `crossgrad.torch`
# never touched, so Inductor's cache-key pickler probes the lazy attribute), compiled
# forward and backward once per backward scale given; prints the gradients and the cache
# counts.
_TORCH_RUN = """
import json, sys
import torch
import crossgrad as cg
from crossgrad.backends.common import compile_cache
from crossgrad.backends import torch as backend
compile_cache.configure(sys.argv[1], ["torch"])
grads = []
for scale in map(float, sys.argv[2:]):
  op = cg.OpDef("cache_probe", lambda xp, x: (2.0 * x, ()), lambda xp, r, g: (scale * g,))
  f = backend.get(op)
  x = torch.arange(4.0, requires_grad=True)
  torch.compile(lambda x: f(x).sum(), fullgraph=True, dynamic=False)(x).backward()
  grads.append(x.grad.tolist())
print(json.dumps({"grads": grads, "api_imported": "crossgrad.api.torch" in sys.modules,
                  **compile_cache.stats(["torch"])["torch"]}))
"""


def _torch_run(cache, *scales):
  done = subprocess.run([sys.executable, "-c", _TORCH_RUN, str(cache), *map(str, scales)],
                        capture_output=True, text=True, check=False, timeout=600)
  assert done.returncode == 0, done.stderr
  assert "Failed to pickle" not in done.stderr, done.stderr
  return json.loads(done.stdout.splitlines()[-1])


def test_torch_compile_reads_its_cache_and_never_serves_a_changed_backward(tmp_path):
  cold = _torch_run(tmp_path, 2.0)
  assert cold == {"grads": [[2.0] * 4], "api_imported": False, "hits": 0, "misses": 1}
  assert (tmp_path / "torch" / "aotautograd").is_dir()
  # Then the same op (read from the cache), and the same forward with another (wrong)
  # backward, which must be compiled, not served the first one's.
  warm = _torch_run(tmp_path, 2.0, 3.0)
  assert warm == {"grads": [[2.0] * 4, [3.0] * 4], "api_imported": False, "hits": 1,
                  "misses": 1}


def test_tensorflow_traces_each_graph_once_per_dtype():
  """No retracing within a run: the special-value rows reuse the graph of the first row."""
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  def forward(xp, x):
    return xp.where(x > 0, x, 0.2 * x), (x,)

  def backward(xp, residuals, g):
    (x,) = residuals
    return (xp.where(x > 0, g, 0.2 * g),)

  # An op of its own: graphs other tests compiled (leaky_relu's) are not this run's.
  def sample(rng):  # Off the kink at 0.
    return (rng.uniform(0.5, 2.0, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4)),)

  op = cg.OpDef("t_traced_once", forward, backward, sample=sample)
  before = set(base._COMPILED)  # pylint: disable=protected-access
  report = cg.cross_check([op], backends=["tensorflow"], dtypes=["float32"],
                          modes=["graph"], special="advisory")
  assert report.ok and len(report.rows) > 4
  new = [fn for key, fn in base._COMPILED.items() if key not in before]  # pylint: disable=protected-access
  assert new and [fn.experimental_get_tracing_count() for fn in new] == [1] * len(new)
