"""Eager op bodies on plain tensors where the standard's array object changes nothing.

A torch op body sees `array_object.Array`, whose wrapping costs a Python call per
operator and ``xp`` call: a tenth of an eager step of small arrays. Each op core's `PlainBodies`
therefore runs the first eager call of its forward, and of its backward, for a signature on
`Array`, probed (`array_object.probe`): it records where a plain ``torch.Tensor`` would
behave otherwise (``size``, ``to_device``, an operator's or indexing's non-torch path, ...)
and where values reach Python (``bool``, ``float``, ``nonzero``, ...). A signature whose probe
recorded nothing and raised nothing runs on plain tensors and the plain namespace from then
on: the body's control flow sees nothing but the signature, so it takes the same path, with
the same torch calls, as the probe did. Any other signature stays on `Array`.

A signature is what a body's control flow can see of its arguments but values (the op's
parameters are the core's own): for a forward of plain tensors all on the CPU, their shapes
and dtypes (the op core's `op_core.Signature`); for the backward after a forward that runs
plain, the same; for any other call, the body, its namespace, each tensor's shape, dtype and
device, the arguments' structure and their Python constants (`_signature`).

Under ``torch.compile`` (Dynamo traces the wrapper away), on meta and fake tensors, and
inside `always_wrapped`, every call runs on `Array` and nothing is remembered. Under
torch.func transforms and forward-mode AD a signature probed eagerly runs as found (their
tensors take the same torch calls as plain ones, per example under vmap); no probe runs
there, so a new signature runs on `Array` and is not remembered.
"""

from __future__ import annotations

import contextlib

import torch
from torch.autograd import forward_ad

from crossgrad.backends.common import base
from crossgrad.backends.torch import array_object
from crossgrad.backends.torch.array_object import Array, BodyNamespace

_SIGNATURE_LIMIT = 256  # Walked signatures an op core remembers (then it starts afresh).
_ELIDING = [True]  # A list, not a `scoped.Switch`: Dynamo cannot trace ContextVar.get.

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


_FORWARD, _BACKWARD = 0, 1  # In a signature's memo: whether each runs plain (None: unknown).


class PlainBodies:
  """One op core's `op_core.Body`: its forward and backward on plain tensors for each
  signature whose probe found that `Array` changes nothing (the module docstring).

  Eagerly the op core hands the `op_core.Signature` of the forward's inputs: their keys
  (shape and dtype). With ``on_cpu``, the body namespace the core hands when every input is
  on the CPU, the keys say the devices too, and the verdicts live in the signature's memo.
  A backward after a forward that runs plain for its keys has the same signature: that
  forward's control flow saw nothing else, so the structure, shapes, dtypes, devices and
  constants of its residuals and cotangents follow from it. Any other call is known by
  walking its arguments (`_signature`).
  """

  def __init__(self, on_cpu: BodyNamespace):
    self._on_cpu = on_cpu
    self._walked: dict[tuple, bool] = {}

  # The common call (on the CPU, its verdict known) comes first, with no call in its way: it
  # runs twice in every train step, where each Python call costs a tenth of a microsecond.
  def forward(self, fn, namespace_, inputs, params, signature):
    if type(namespace_) is not BodyNamespace:  # array_object.native_arrays.
      return fn(namespace_, *inputs, **params)
    if signature is not None and namespace_ is self._on_cpu and _ELIDING[-1]:
      for x in inputs:
        if type(x) is not _TENSOR and type(x) is not _PARAMETER:  # A subclass, a fake.
          break
      else:
        verdicts = signature.memo or _new_memo(signature)
        if verdicts[_FORWARD]:
          return fn(namespace_._xp, *inputs, **params)  # pylint: disable=protected-access
        if verdicts[_FORWARD] is None and _may_probe():
          return _probed(lambda same: verdicts.__setitem__(_FORWARD, same),
                         fn, namespace_, inputs, params)
        return _wrapped(fn, namespace_, inputs, params)
    return self._walking(fn, namespace_, inputs, params)

  def backward(self, fn, namespace_, args, params, signature):
    if type(namespace_) is not BodyNamespace:
      return fn(namespace_, *args, **params)
    verdicts = None if signature is None else signature.memo
    if verdicts is not None and namespace_ is self._on_cpu and _ELIDING[-1]:
      if verdicts[_BACKWARD]:
        return fn(namespace_._xp, *args, **params)  # pylint: disable=protected-access
      if verdicts[_BACKWARD] is None and verdicts[_FORWARD] and _may_probe():
        return _probed(lambda same: verdicts.__setitem__(_BACKWARD, same),
                       fn, namespace_, args, params)
      if verdicts[_BACKWARD] is False:
        return _wrapped(fn, namespace_, args, params)
    return self._walking(fn, namespace_, args, params)

  def _walking(self, fn, namespace_, args, params):
    """The body, known by `_signature` of its arguments (on `Array` where they have none,
    while compiled or wrapped only, and on meta tensors)."""
    key = [fn, namespace_]
    if _is_compiling() or not _ELIDING[-1] or not _signature(args, key):
      return _wrapped(fn, namespace_, args, params)
    if any(type(k) is torch.device and k.type == "meta" for k in key):
      return _wrapped(fn, namespace_, args, params)
    key = tuple(key)
    verdict = self._walked.get(key)
    if verdict:
      return fn(namespace_._xp, *args, **params)  # pylint: disable=protected-access
    if verdict is None and _may_probe():
      return _probed(lambda same: base.interned(self._walked, key, lambda _: same,
                                                _SIGNATURE_LIMIT),
                     fn, namespace_, args, params)
    return _wrapped(fn, namespace_, args, params)


def _new_memo(signature) -> list:
  signature.memo = [None, None]
  return signature.memo


def _may_probe() -> bool:
  """Whether a probe may run and its verdict be remembered: not under torch.func transforms
  or forward-mode AD, whose tensors are not the plain ones a later eager call has (their
  calls use what eager probes found). Under torch.compile no call may, nor inside
  `always_wrapped`: the callers check that."""
  return not _transforms_active() and forward_ad._current_level < 0  # pylint: disable=protected-access


def _wrapped(fn, namespace_, args, params):
  """The body on `Array`: its arguments wrapped, what it returns unwrapped."""
  wrapped = [Array(a) if type(a) is _TENSOR else array_object.wrap(a)
             for a in args]
  return array_object.unwrap(fn(namespace_, *wrapped, **params))


def _probed(remember, fn, namespace_, args, params):
  """The body on `Array`, probed; then ``remember(same)``: whether plain tensors run it the
  same (False where it raised)."""
  same = False
  try:
    result, same = array_object.probe(
        lambda: _wrapped(fn, array_object.probing(namespace_), args, params))
    return result
  finally:
    remember(same)


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
