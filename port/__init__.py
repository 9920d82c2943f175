"""crossgrad-port: custom gradients already written in torch, JAX or TensorFlow become
crossgrad ops, proved equal to their originals (docs/porting.md).

``crossgrad.port(obj)`` ports one definition (`crossgrad.port.run.one`); the
``crossgrad-port`` command ports files (`crossgrad.port.main`). A framework plugs in with
a source module (`crossgrad.port.definition` says what it provides, `discover.SOURCES`
lists them) and a translation table (`crossgrad.port.tables`).
"""

from __future__ import annotations

import sys
import types


def port(obj, **options):
  """``obj`` ported to the op language and proved against itself: a `prove.Result`
  (``status``, ``op``, ``module``, ``reasons``); options as `crossgrad.port.run.one`."""
  from crossgrad.port import run  # pylint: disable=g-import-not-at-top
  return run.one(obj, **options)


class _CallableModule(types.ModuleType):
  """This package, callable as `port`: ``crossgrad.port(obj)``."""

  def __call__(self, obj, **options):
    return port(obj, **options)


sys.modules[__name__].__class__ = _CallableModule
