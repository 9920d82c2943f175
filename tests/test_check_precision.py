"""The check pins full float32 precision in every backend (restored afterwards), measures
the frameworks' defaults with precision="framework", and reports nondeterminism."""

import jax
import numpy as np
import pytest
import tensorflow as tf
import torch

import crossgrad as cg
from crossgrad.checker import engine, selection

FRAMEWORKS = ("jax", "tensorflow", "torch")


def _settings():
  return {"jax": jax.config.jax_default_matmul_precision,
          "tensorflow": tf.config.experimental.tensor_float_32_execution_enabled(),
          "torch": (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
                    torch.get_float32_matmul_precision())}


@pytest.fixture
def non_default_settings():
  """Settings a user might have chosen, which the check must give back unchanged."""
  before = _settings()
  tf.config.experimental.enable_tensor_float_32_execution(True)
  torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
  torch.set_float32_matmul_precision("medium")
  jax.config.update("jax_default_matmul_precision", "bfloat16")
  yield _settings()
  tf.config.experimental.enable_tensor_float_32_execution(before["tensorflow"])
  torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before["torch"][:2]
  torch.set_float32_matmul_precision(before["torch"][2])
  jax.config.update("jax_default_matmul_precision", before["jax"])


HIGHEST = {"jax": "highest", "tensorflow": False, "torch": (False, False, "highest")}


def test_highest_is_applied_in_the_block_and_restored_after(non_default_settings):
  modules = selection.backends(FRAMEWORKS)
  with engine.pinned(modules, "highest"):
    assert _settings() == HIGHEST
  assert _settings() == non_default_settings
  with engine.pinned(modules, "framework"):
    assert _settings() == non_default_settings
  assert _settings() == non_default_settings


def test_settings_are_restored_when_the_block_raises(non_default_settings):
  with pytest.raises(ZeroDivisionError):
    with engine.pinned(selection.backends(FRAMEWORKS), "highest"):
      raise ZeroDivisionError
  assert _settings() == non_default_settings


def _recording_op(seen):
  def forward(xp, x):
    seen.setdefault(xp.backend, _settings()[xp.backend]) if xp.backend in FRAMEWORKS else None
    return 2.0 * x, ()

  return cg.OpDef("t_precision_probe", forward, lambda xp, r, g: (2.0 * g,),
                  sample=lambda rng: (rng.standard_normal(3),))


def test_the_ops_run_pinned_by_default_and_with_the_defaults_when_asked(non_default_settings):
  seen = {}
  report = cg.cross_check([_recording_op(seen)], backends=FRAMEWORKS, dtypes=["float32"],
                          modes=["eager"], special=False)
  assert report.ok and seen == HIGHEST
  assert _settings() == non_default_settings
  seen.clear()
  report = cg.cross_check([_recording_op(seen)], backends=FRAMEWORKS, dtypes=["float32"],
                          modes=["eager"], special=False, precision="framework")
  assert report.ok and seen == {k: non_default_settings[k] for k in FRAMEWORKS}


def test_an_unknown_precision_is_a_clear_error():
  with pytest.raises(cg.CrossgradError, match="precision: unknown value"):
    cg.cross_check(["leaky_relu"], backends=["jax"], precision="tf32")


def test_determinism_rows_pass_for_repeatable_ops_and_catch_the_others():
  calls = []

  def flaky(xp, x):  # Eager TF runs the Python forward on every call: a new bit each time.
    calls.append(1)
    return x * (1.0 + 2.0 ** -20 * (len(calls) % 2)) if xp.backend == "tensorflow" else x, ()

  steady = cg.OpDef("t_steady", lambda xp, x: (3.0 * x, ()), lambda xp, r, g: (3.0 * g,),
                    sample=lambda rng: (rng.standard_normal(4),))
  report = cg.cross_check([steady], backends=["jax"], dtypes=["float32"], modes=["eager"],
                          special=False, determinism=True)
  (row,) = [r for r in report.rows if r.check == "determinism"]
  assert report.ok and row.note == "bitwise equal in two runs"
  assert not [r for r in cg.cross_check([steady], backends=["jax"], dtypes=["float32"],
                                        modes=["eager"], special=False).rows
              if r.check == "determinism"]  # Off by default.
  wobbly = cg.OpDef("t_wobbly", flaky, lambda xp, r, g: (g,), gradient="declared",
                    sample=lambda rng: (rng.standard_normal(4),))
  report = cg.cross_check([wobbly], backends=["tensorflow"], dtypes=["float32"],
                          modes=["eager"], special=False, determinism=True, tolerance=1e-3)
  (row,) = [r for r in report.rows if r.check == "determinism"]
  assert not row.ok and row.note.startswith("nondeterministic: output 0[0]: ")
  assert row.note.endswith("vs first run " + row.note.split("vs first run ")[1])
