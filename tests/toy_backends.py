"""NumPy under another name: a backend written only against `protocol.Backend`, for tests
that register a backend of their own (a toy, a twin that carries its own bug, one in
another complex-gradient convention)."""

import contextlib

import numpy as np

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.registry import validation
from crossgrad.registry.namespace import EXTENSIONS, Namespace


class NumpyTwin:
  """Runs an op's forward and backward in NumPy, under its own name and ``xp``; its
  cotangents scaled by ``gradient_scale`` (computed in at least float32, rounded once), so
  a test can plant a wrong backend."""

  VERSION = np.__version__
  MODES = ("eager",)

  def __init__(self, name: str = "toy", gradient_scale: float = 1.0):
    self.NAME = name  # pylint: disable=invalid-name
    self.gradient_scale = gradient_scale
    self.xp = Namespace(name, cg.numpy.xp,
                        extensions={n: getattr(cg.numpy.xp, n) for n in EXTENSIONS})
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

  def vjp(self, op, params, inputs, cotangent):
    """The outputs and the validated cotangents of ``op`` at ``inputs``."""
    with np.errstate(all="ignore"):
      outputs, residuals = op.forward(self.xp, *inputs, **params)
      several = isinstance(outputs, tuple)
      cotangents = op.backward(self.xp, residuals,
                               tuple(cotangent) if several else cotangent[0], **params)
    return (tuple(np.asarray(o) for o in validation.as_tuple(outputs)),
            validation.check_cotangents(op, self.NAME, [self.spec_of(x) for x in inputs],
                                        cotangents, self.spec_of))

  def evaluate(self, op, params, inputs, cotangent, *, device, mode):
    del device
    base.check_mode(self.NAME, mode, self.MODES)
    outputs, cotangents = self.vjp(op, params, inputs, cotangent)
    return outputs, tuple(self._scaled(c) for c in cotangents)

  def _scaled(self, c):
    if c is None or self.gradient_scale == 1.0:
      return c
    c = np.asarray(c)
    return (c.astype(np.promote_types(c.dtype, np.float32)) * self.gradient_scale).astype(c.dtype)

  def precision_scope(self, arrays, float32=None):
    del arrays, float32
    return contextlib.nullcontext()

  def register_container(self, cls, flatten, unflatten):
    del cls, flatten, unflatten
