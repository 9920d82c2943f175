"""The registry: duplicate checks, helpful unknown-name errors, one emitted function per params."""

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.examples import my_ops


def _fwd(xp, x):
  return x * 2.0, ()


def _bwd(xp, residuals, g):
  return (g * 2.0,)


@pytest.fixture
def doubled():
  op = cg.register(cg.OpDef("t_doubled", _fwd, _bwd))
  yield op
  cg.unregister("t_doubled")


def test_builtin_ops_are_registered():
  assert {"custom_add", "ste_quantize", "leaky_relu"} <= set(cg.names())
  assert cg.names() == sorted(cg.names())


def test_same_definition_twice_is_harmless(doubled):
  again = cg.register(cg.OpDef("t_doubled", _fwd, _bwd))
  assert again is doubled


def test_module_imported_twice_registers_once():
  import importlib  # pylint: disable=g-import-not-at-top
  before = cg.get("clipped_ste")
  importlib.reload(my_ops)  # New function objects with the same code: no error.
  assert my_ops.CLIPPED_STE is before is cg.get("clipped_ste")


def test_different_definition_under_taken_name_is_an_error(doubled):
  with pytest.raises(cg.CrossgradError, match="already registered with a different definition"):
    cg.register(cg.OpDef("t_doubled", _fwd, lambda xp, residuals, g: (g * 3.0,)))


def test_unknown_name_lists_known_ops():
  with pytest.raises(cg.CrossgradError) as info:
    cg.get("leaky_rleu")
  message = str(info.value)
  assert "Did you mean 'leaky_relu'?" in message
  for name in ("custom_add", "ste_quantize", "leaky_relu"):
    assert name in message


def test_one_cached_function_per_op_and_params():
  first = cg.numpy.get("ste_quantize", bits=4)
  assert cg.numpy.get("ste_quantize", bits=4) is first
  assert cg.numpy.get("ste_quantize", bits=5) is not first
  np.testing.assert_array_equal(first(np.array([9.0, -9.0])), [7.0, -8.0])


def test_register_rejects_non_opdef():
  with pytest.raises(cg.CrossgradError, match="register takes an OpDef"):
    cg.register("leaky_relu")


def test_error_message_shows_only_the_known_parts():
  only_actual = cg.CrossgradError("bad", op="o", argument="a", actual=3)
  assert str(only_actual) == "[crossgrad] op 'o', a: bad: got 3"
  only_expected = cg.CrossgradError("bad", argument="a", expected=">= 1")
  assert str(only_expected) == "[crossgrad] a: bad: expected >= 1"
  both = cg.CrossgradError("bad", backend="jax", expected=1, actual=2)
  assert str(both) == "[crossgrad] backend jax: bad: expected 1, got 2"
  assert "None" not in str(only_actual) + str(only_expected)
