"""The written backend protocol is enough to add a framework: a toy backend built from it
alone is cross-checked like the built-in ones, and a wrong one is caught."""

import contextlib

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends import base, protocol
from crossgrad.registry import validation


class ToyBackend:
  """NumPy under another name, written only against `protocol.Backend`."""

  VERSION = np.__version__
  MODES = ("eager",)
  xp = cg.numpy.xp

  def __init__(self, name="toy", gradient_scale=1.0):
    self.NAME = name  # pylint: disable=invalid-name
    self.gradient_scale = gradient_scale
    self.get = base.make_get(name, self._emit)

  def _emit(self, op, params):
    def call(*inputs):
      return op.forward(self.xp, *(np.asarray(x) for x in inputs), **params)[0]
    return call

  def spec_of(self, x):
    x = np.asarray(x)
    return validation.ArraySpec(x.shape, x.dtype.name)

  def devices(self):
    return ["cpu:0"]

  def evaluate(self, op, params, inputs, cotangent, *, device, mode):
    del device
    base.check_mode(self.NAME, mode, self.MODES)
    outputs, residuals = op.forward(self.xp, *inputs, **params)
    single = not isinstance(outputs, tuple)
    cts = op.backward(self.xp, residuals, cotangent[0] if single else tuple(cotangent),
                      **params)
    cts = validation.as_tuple(cts)
    return (tuple(np.asarray(o) for o in validation.as_tuple(outputs)),
            tuple(None if c is None else np.asarray(c) * self.gradient_scale for c in cts))

  def precision_scope(self, arrays):
    del arrays
    return contextlib.nullcontext()

  def register_container(self, cls, flatten, unflatten):
    del cls, flatten, unflatten


@pytest.fixture
def toy():
  backends = []

  def add(**kwargs):
    backends.append(base.register(ToyBackend(**kwargs)))
    return backends[-1]

  yield add
  for backend in backends:
    base.unregister(backend.NAME)


def test_builtin_backends_implement_the_protocol():
  for name in ("numpy", "tensorflow", "jax", "torch"):
    assert isinstance(base.load(name), protocol.Backend), name


def test_toy_backend_cross_checks_green(toy):
  toy()
  assert "toy" in base.names()
  report = cg.cross_check(["leaky_relu", "custom_add", "center_loss"], backends=["toy"])
  assert report.ok, report.table(failures_only=True)
  checked = {(r.backend, r.check) for r in report.rows}
  assert {("toy", "forward"), ("toy", "vjp")} <= checked


def test_a_wrong_toy_backend_fails_the_check(toy):
  toy(name="toy_wrong", gradient_scale=1.01)
  report = cg.cross_check(["leaky_relu"], backends=["toy_wrong"])
  failing = {(r.backend, r.check) for r in report.failures}
  assert failing == {("toy_wrong", "vjp"), ("toy_wrong", "special")}


def test_registering_an_incomplete_backend_names_what_is_missing():
  class Incomplete:
    NAME = "half"
    MODES = ("eager",)

  with pytest.raises(cg.CrossgradError, match="missing VERSION, xp, get"):
    base.register(Incomplete())
  assert "half" not in base.names()


def test_a_builtin_name_cannot_be_taken():
  with pytest.raises(cg.CrossgradError, match="built-in backend"):
    base.register(ToyBackend(name="jax"))
