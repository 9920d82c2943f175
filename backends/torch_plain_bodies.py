"""Eager op bodies on plain tensors where the standard's array object changes nothing.

A torch op body sees `torch_array_object.Array`, whose wrapping costs a Python call per
operator and ``xp`` call: a tenth of an eager step of small arrays. Each op core's ``body``
(`make_body`) therefore runs the first eager call of a body for a signature (`_signature`:
the body, its namespace, so the device, and each argument's shape, dtype and device, the
arguments' structure and their Python constants; the op's parameters are the core's) on
`Array`, probed (`torch_array_object.probe`): it records where a plain ``torch.Tensor`` would
behave otherwise (``size``, ``to_device``, an operator's or indexing's non-torch path, ...)
and where values reach Python (``bool``, ``float``, ``nonzero``, ...). A signature whose probe
recorded nothing and raised nothing runs on plain tensors and the plain namespace from then
on: the body's control flow sees nothing but the signature, so it takes the same path, with
the same torch calls, as the probe did. Any other signature stays on `Array`.

Under ``torch.compile`` (Dynamo traces the wrapper away), torch.func transforms, forward-mode
AD, on meta and fake tensors, and inside `always_wrapped`, every call runs on `Array` and
nothing is remembered.
"""

from __future__ import annotations

import contextlib

import torch
from torch.autograd import forward_ad

from crossgrad.backends import base
from crossgrad.backends import torch_array_object
from crossgrad.backends.op_core import Body
from crossgrad.backends.torch_array_object import Array, BodyNamespace

_SIGNATURE_LIMIT = 256  # Signatures an op core remembers (then it starts afresh).
_ELIDING = [True]

# Bound once: they run on every eager call. Dynamo knows is_compiling by identity.
_is_compiling = torch.compiler.is_compiling
_transforms_active = torch._C._are_functorch_transforms_active  # pylint: disable=protected-access
_TENSOR, _PARAMETER = torch.Tensor, torch.nn.Parameter


@contextlib.contextmanager
def always_wrapped():
  """Op bodies run in this scope see `Array` on every call (none runs on plain tensors)."""
  _ELIDING.append(False)
  try:
    yield
  finally:
    _ELIDING.pop()


def make_body() -> Body:
  """One op core's ``body(fn, xp, args, params)`` (`op_core.Adapter.make_body`), with its
  own memory of which signatures run on plain tensors (the module docstring)."""
  plain: dict[tuple, bool] = {}

  def body(fn, namespace_, args, params):
    if type(namespace_) is not BodyNamespace:  # torch_array_object.native_tensors.
      return fn(namespace_, *args, **params)
    # Dynamo traces the wrapper away, and would guard on ``plain``: compiled, transformed and
    # forward-mode calls run wrapped and are not remembered.
    if (_is_compiling() or not _ELIDING[-1] or _transforms_active()
        or forward_ad._current_level >= 0):  # pylint: disable=protected-access
      return _wrapped(fn, namespace_, args, params)
    key = [fn, namespace_]
    if not _signature(args, key):
      return _wrapped(fn, namespace_, args, params)
    key = tuple(key)
    verdict = plain.get(key)
    if verdict:
      return fn(namespace_._xp, *args, **params)  # pylint: disable=protected-access
    if verdict is None:
      return _probed(plain, key, fn, namespace_, args, params)
    return _wrapped(fn, namespace_, args, params)

  return body


def _wrapped(fn, namespace_, args, params):
  """The body on `Array`: its arguments wrapped, what it returns unwrapped."""
  wrapped = [Array(a) if type(a) is _TENSOR else torch_array_object.wrap(a)
             for a in args]
  return torch_array_object.unwrap(fn(namespace_, *wrapped, **params))


def _probed(plain: dict, key: tuple, fn, namespace_, args, params):
  """The body on `Array`, probed; ``plain[key]`` then says whether plain tensors run it the
  same (False where it raised). On meta tensors, the body on `Array` and nothing remembered."""
  if any(type(k) is torch.device and k.type == "meta" for k in key):
    return _wrapped(fn, namespace_, args, params)
  same = False
  try:
    result, same = torch_array_object.probe(
        lambda: _wrapped(fn, torch_array_object.probing(namespace_), args, params))
    return result
  finally:
    base.interned(plain, key, lambda _: same, _SIGNATURE_LIMIT)


_CONSTANTS = frozenset((type(None), bool, int, float, complex, str, torch.dtype, torch.device))


def _signature(args, key: list) -> bool:
  """Appends to ``key`` what a body's control flow can see of ``args`` but values: each
  tensor's shape, dtype and device; each constant's type and value; each container's kind and
  length, then its parts. False where there is more: another object, or a tensor subclass
  (a fake tensor). One flat list, read unambiguously: a shape starts a tensor's three entries,
  a type the two of a constant or a container."""
  for a in args:
    kind = type(a)
    if kind is _TENSOR or kind is _PARAMETER:
      key += (a.shape, a.dtype, a.device)
    elif kind is tuple or kind is list:
      key += (kind, len(a))
      if not _signature(a, key):
        return False
    elif kind in _CONSTANTS:
      key += (kind, a)
    elif kind is dict or isinstance(a, tuple):  # A named tuple.
      key += (kind, len(a))
      if not _signature((*a, *a.values()) if kind is dict else a, key):
        return False
    else:
      return False
  return True
