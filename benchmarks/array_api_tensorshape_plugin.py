"""A test-side pytest plugin for array-api-tests: the suite's tooling reads tf.TensorShape.

Used only by ``array_api_conformance`` for its "shapes as tuples" row of the tensorflow
namespace. ``tf.Tensor.shape`` is a ``tf.TensorShape``, not the tuple the standard asks of
``array.shape``: an array-object property, which crossgrad never changes. The suite hands
``x.shape`` to ndindex and Hypothesis, which accept only tuples, so tests of the namespace's
functions fail before the function is checked. This plugin converts TensorShape arguments to
tuples at the entry points of those tools and of the suite's helper modules (and its
Hypothesis strategies namespace ``xps``). It patches only the test suite's tooling; TensorFlow,
``tf.Tensor`` and the namespace under test are untouched, and every assertion of the suite about
a result (its values, dtype and shape, compared as the suite compares them) still applies.
"""

import functools
import sys
import types

import pytest
import tensorflow as tf

_MODULES = ("ndindex", "hypothesis.extra._array_helpers", "hypothesis.extra.array_api",
            "array_api_tests.shape_helpers", "array_api_tests.hypothesis_helpers",
            "array_api_tests.pytest_helpers")


def _coerce(v):
  """TensorShape (also inside a tuple or list) as a tuple; anything else unchanged."""
  if isinstance(v, tf.TensorShape):
    return tuple(v.as_list())
  if type(v) in (tuple, list) and any(isinstance(e, tf.TensorShape) for e in v):
    return type(v)(_coerce(e) for e in v)
  return v


def _wrap(fn):
  @functools.wraps(fn)
  def wrapped(*args, **kwargs):
    return fn(*[_coerce(a) for a in args], **{k: _coerce(v) for k, v in kwargs.items()})
  wrapped.__tensorshape_adapted__ = True
  return wrapped


def _adapt(holder, replaced, wrap):
  """Wraps the functions ``holder`` holds for which ``wrap(function)`` is true, and puts the
  wrapped version of any function wrapped before in place of the original."""
  for attr, value in list(vars(holder).items()):
    if not isinstance(value, types.FunctionType) or getattr(
        value, "__tensorshape_adapted__", False) or isinstance(
            getattr(type(holder), attr, None), property):  # xps.complex_dtypes is read-only.
      continue
    if value in replaced or wrap(value):
      replaced[value] = replaced.get(value) or _wrap(value)
      setattr(holder, attr, replaced[value])


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
  del config
  import array_api_tests  # pylint: disable=import-outside-toplevel
  import array_api_tests.hypothesis_helpers  # noqa: F401  pylint: disable=import-outside-toplevel
  import array_api_tests.pytest_helpers  # noqa: F401  pylint: disable=import-outside-toplevel
  import array_api_tests.shape_helpers  # noqa: F401  pylint: disable=import-outside-toplevel
  import hypothesis.extra.array_api  # noqa: F401  pylint: disable=import-outside-toplevel
  import ndindex  # noqa: F401  pylint: disable=import-outside-toplevel
  replaced = {}
  for name, module in list(sys.modules.items()):
    if module is not None and name.startswith(_MODULES):
      _adapt(module, replaced, lambda f, name=name: f.__module__ == name)  # Its own functions.
  _adapt(array_api_tests.xps, replaced, lambda f: True)  # The Hypothesis strategies namespace.
  for name, module in list(sys.modules.items()):  # `from x import f` made copies elsewhere.
    if module is not None and name.startswith(_MODULES + ("array_api_tests",)):
      _adapt(module, replaced, lambda f: False)
