"""The held-back set (`tests/variant_heldback.py`): ten mistakes green under the check of the
one sample (``variants="none"``) are caught by the default check, each diagnosed naming its
input and the variant; their correct versions are green in every default backend (float64, the
backends' variant rows' dtype)."""

import pytest

import crossgrad as cg
from crossgrad.checker.diagnosis import causes

from tests import variant_heldback

MISTAKES = variant_heldback.MISTAKES


def _ops(version):
  """The ops with the correct (``version`` 1) or the mistaken (2) backward."""
  return [cg.OpDef(f"t_heldback_{name}", case[0], case[version], sample=case[3])
          for name, case in MISTAKES.items()]


@pytest.fixture(scope="module")
def mistaken_default():
  ops = _ops(2)
  return causes.diagnose(cg.cross_check(ops, backends=[]), ops)


def test_every_mistake_is_green_on_its_one_sample():
  report = cg.cross_check(_ops(2), backends=[], variants="none")
  assert report.ok, report.table()


def test_the_default_check_catches_every_mistake_naming_its_input(mistaken_default):
  named = {}
  for row in mistaken_default.failures:
    assert row.check == "variant" and row.variant, row
    named.setdefault(row.op.removeprefix("t_heldback_"), set()).add(row.diagnosis.input)
  assert set(named) == set(MISTAKES)  # 10 of 10 caught (the issue asks for 9).
  wrong = {name: inputs for name, inputs in named.items() if MISTAKES[name][4] not in inputs}
  assert not wrong, wrong


def test_each_diagnosis_names_the_variant(mistaken_default):
  for row in mistaken_default.failures:
    assert row.variant in row.diagnosis.message, (row.variant, row.diagnosis.message)


# The modes the backends run variant rows in by default: eager and each one's first compiled
# mode. The transformation modes (vmap, scan, vectorized_map, ...) run none, so the check
# below leaves them out.
VARIANT_MODES = {"jax": ("eager", "jit"), "tensorflow": ("eager", "graph"),
                 "torch": ("eager", "compile")}


def test_the_correct_versions_are_green_in_every_default_backend():
  report = cg.cross_check(_ops(1), dtypes=["float64"],  # The variants' dtype and modes.
                          modes=sorted({m for ms in VARIANT_MODES.values() for m in ms}))
  assert report.ok, "\n".join(map(str, report.failures))
  assert {r.backend for r in report.rows if r.check == "variant"} >= {
      "numpy", "jax", "tensorflow", "torch"}
  assert {(r.backend, r.mode) for r in report.rows
          if r.check == "variant" and r.backend != "numpy"} == {
              (b, m) for b, ms in VARIANT_MODES.items() for m in ms}
