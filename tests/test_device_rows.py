"""The cross-check over several devices: device rows, device lists, missing devices."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.backends.common import cpu_devices
from crossgrad.checker import selection
from crossgrad.checker.rows import backend_rows
from crossgrad.checker.report import RowContext

NAMES = ["output 0", "dx"]
MODES = {"tensorflow": {"eager", "graph", "jit"}, "jax": {"eager", "jit"}}
TRANSFORMS = {"tensorflow": {"vectorized_map"}, "jax": {"vmap", "scan", "checkpoint",
                                                     "batched_vjp"}}
# The variant rows' modes (eager and the first compiled one), on the first device only.
VARIANT_MODES = {"tensorflow": {"eager", "graph"}, "jax": {"eager", "jit"}}
if "torch" in base.default_backends():
  MODES["torch"] = {"eager", "compile"}
  TRANSFORMS["torch"] = {"vmap", "batched_vjp"}
  VARIANT_MODES["torch"] = {"eager", "compile"}


def _check(tmp_path, *flags):
  path = tmp_path / "report.json"
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  done = subprocess.run(
      [sys.executable, "-m", "crossgrad.check", "--ops=leaky_relu", "--dtypes=float32",
       f"--json={path}", *flags], capture_output=True, text=True, env=env, timeout=300,
      check=False)
  return done, (json.loads(path.read_text()) if path.exists() else None)


def test_all_devices_are_checked_and_compared_with_the_first(tmp_path):
  done, report = _check(tmp_path, "--cpu_devices=3", "--devices=all")
  assert done.returncode == 0, done.stderr[-2000:]
  for backend in MODES:  # The CPU's; a GPU machine adds its accelerators, checked alike.
    cpus = [d for d in report["environment"][f"{backend}_devices"] if d.startswith("cpu:")]
    assert cpus == ["cpu:0", "cpu:1", "cpu:2"], backend
  rows = report["rows"]
  for backend, modes in MODES.items():
    for device in ("cpu:0", "cpu:1", "cpu:2"):
      checked = {(r["mode"], r["check"]) for r in rows
                 if r["backend"] == backend and r["device"] == device}
      wanted = {(m, c) for m in modes for c in ("forward", "vjp", "special")}
      if backend == "torch":  # Compiled, no forward mode or second order: skipped rows.
        wanted |= {("compile", "skipped"), ("eager", "jvp"), ("eager", "second_order")}
      else:
        wanted |= {(m, c) for m in modes for c in ("jvp", "second_order")}
      wanted |= {(m, c) for m in TRANSFORMS[backend] for c in ("forward", "vjp")}
      if device != "cpu:0":
        wanted |= {(m, "device") for m in modes}
      else:  # The first device's: variants, and each mode using the custom backward.
        wanted |= {(m, "variant") for m in VARIANT_MODES[backend]}
        wanted |= {(m, "custom_rule") for m in (*modes, *TRANSFORMS[backend])}
      assert checked == wanted, (backend, device)
  device_rows = [r for r in rows if r["check"] == "device"]
  assert all(r["note"].startswith("vs cpu:0") and r["ok"] for r in device_rows)
  assert "failing rows: none" in done.stdout and "0 failing" in done.stdout


def test_a_device_list_selects_those_devices(tmp_path):
  done, report = _check(tmp_path, "--cpu_devices=3", "--devices=cpu:0,cpu:2",
                        "--backends=jax")
  assert done.returncode == 0, done.stderr[-2000:]
  devices = {r["device"] for r in report["rows"] if r["backend"] == "jax"}
  assert devices == {"cpu:0", "cpu:2"}
  device_rows = [r for r in report["rows"] if r["check"] == "device"]
  assert {r["device"] for r in device_rows} == {"cpu:2"}


def test_a_device_no_backend_has_is_an_error():
  with pytest.raises(cg.CrossgradError, match=r"devices: unknown value: expected one of all, "
                     r"cpu, cpu:0.*got 'cpu:99'"):
    cg.cross_check(["leaky_relu"], backends=("jax",), dtypes=("float32",),
                   devices=["cpu:0", "cpu:99"], modes=("jit",))


def test_a_device_one_backend_lacks_is_a_failing_row():
  script = ("from crossgrad.backends.common import cpu_devices\n"
            "cpu_devices.configure(2, ['jax'])\n"
            "import crossgrad as cg\n"
            "report = cg.cross_check(['leaky_relu'], dtypes=['float32'], modes=['eager'],\n"
            "                        devices=['cpu:1'], special=False)\n"
            "for r in report.rows:\n"
            "  print(r.backend, r.device, r.check, r.ok, r.note)\n")
  done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                        timeout=300, check=True)
  rows = [line.split(" ", 4) for line in done.stdout.splitlines()]
  missing = [r for r in rows if r[0] == "tensorflow"]
  assert len(missing) == len(cg.get("leaky_relu").param_sets)
  assert all(r[1:4] == ["cpu:1", "device", "False"] and "no such device" in r[4]
             for r in missing)
  assert {(r[0], r[1], r[3]) for r in rows if r[0] == "jax"} == {("jax", "cpu:1", "True")}


def test_device_row_fails_when_devices_disagree():
  """A planted difference between two devices' cotangents must fail the device row."""
  context = RowContext("leaky_relu", "-", "jax", "cpu:1", "float32", "jit")
  outputs = (np.ones((2, 3), np.float32),)
  first = ("cpu:0", (outputs, (np.full((2, 3), 0.2, np.float32),)))
  row = backend_rows.device_row
  same = row(context, (outputs, (np.full((2, 3), 0.2, np.float32),)), first, NAMES, 1e-5)
  differs = row(context, (outputs, (np.full((2, 3), 0.21, np.float32),)), first, NAMES, 1e-5)
  assert same.ok and same.error == 0 and same.note == "vs cpu:0: bitwise equal"
  assert not differs.ok and "dx" in differs.note
  np.testing.assert_allclose(differs.error, 0.01 / 0.21, rtol=1e-5)


def test_configure_rejects_a_bad_count():
  with pytest.raises(cg.CrossgradError, match="count"):
    cpu_devices.configure(0)


def test_configure_after_start_accepts_only_the_count_already_there():
  script = ("import jax; jax.devices()\n"
            "import crossgrad as cg\n"
            "from crossgrad.backends.common import cpu_devices\n"
            "cpu_devices.configure(1, ['jax'])\n"
            "try:\n"
            "  cpu_devices.configure(2, ['jax'])\n"
            "except cg.CrossgradError as e:\n"
            "  print('refused:', e)\n")
  done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                        timeout=120, check=True)
  assert "refused:" in done.stdout and "expected 2" in done.stdout.replace("'", "")


def test_every_platform_a_backend_has_is_a_device_choice():
  """JAX's GPUs are gpu:N and torch's cuda:N: each platform name selects its devices."""
  class Backend:
    def __init__(self, *names):
      self.names = list(names)

    def devices(self):
      return self.names

  valid = selection._device_names({"jax": Backend("cpu:0", "gpu:0"),
                                   "torch": Backend("cpu:0", "cuda:0", "cuda:1")})
  assert valid == ["all", "cpu", "gpu", "cuda", "cpu:0", "gpu:0", "cuda:0", "cuda:1"]
