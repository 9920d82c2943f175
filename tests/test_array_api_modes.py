"""The conformance command's mode namespaces (benchmarks/array_api_modes.py): a call from a
test of the suite runs compiled or vmapped and gives NumPy's values; the suite's own tools
call xp as it is."""

import inspect
import math
import types

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.benchmarks import array_api_modes

_TEST = """
def call(xp, data):
  x = xp.asarray(data)
  return [xp.maximum(x, 0.0), xp.sum(x, axis=0), xp.concat([x, x], axis=0)]
"""


def _module(name):
  module = types.ModuleType(name)
  exec(compile(_TEST, name, "exec"), module.__dict__)  # pylint: disable=exec-used
  return module


@pytest.mark.parametrize("backend, mode", [(b, m) for b, modes in array_api_modes.MODES.items()
                                           for m in modes])
def test_calls_from_the_suite_run_in_the_mode(backend, mode):
  xp = array_api_modes.namespace(backend, mode)
  runner = xp._run.args[0]  # pylint: disable=protected-access
  used = []
  key = "vmap" if mode == "vmap" else "compile"
  original = getattr(runner, key)
  setattr(runner, key, lambda *a: (used.append(1), original(*a))[1])
  data = np.array([[1.5, -2.0], [-0.5, 3.0]], np.float32)
  expected = [np.maximum(data, 0.0), data.sum(axis=0), np.concatenate([data, data])]
  for name, runs in (("array_api_tests.test_fake", True), ("array_api_tests.helpers", False)):
    used.clear()
    got = _module(name).call(xp, data)
    names = ("maximum", "sum") + (("asarray", "concat") if mode != "vmap" else ())
    assert len(used) == (len(names) if runs else 0), (name, used)
    for g, e in zip(got, expected):
      np.testing.assert_allclose(np.asarray(g), e)
  assert inspect.signature(xp.sum) == inspect.signature(getattr(cg, backend).xp.sum)


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_compiled_calls_tell_negative_nan_and_zero_apart(backend, monkeypatch):
  """Python floats are constants of a compiled call: -NaN and -0.0 get their own traces
  (torch through aot_eager: Inductor's generated code writes any NaN constant as +NaN)."""
  monkeypatch.setenv(array_api_modes.COMPILE_BACKEND, "aot_eager")
  xp = array_api_modes.namespace(backend, "jit" if backend == "jax" else "compile")
  module = types.ModuleType("array_api_tests.test_fake_floats")
  exec(compile("def call(xp, v):\n  return xp.asarray(v)\n", "f", "exec"),  # pylint: disable=exec-used
       module.__dict__)
  for value in (0.0, -0.0, math.nan, -math.nan):
    assert np.signbit(np.asarray(module.call(xp, value))) == np.signbit(value), value
