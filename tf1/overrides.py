"""`override_map`: TF1's ``graph.gradient_override_map`` for TF2 eager, `tf.function` and XLA.

While a scope is open, the TF functions that create the listed op types (`op_types`)
make the op inside `tf.custom_gradient`, with the legacy gradient as its gradient; and
`tf.import_graph_def` applies the map natively to the ops it imports (a trained graph
for guided backprop), where `tf.gradients` and the gradients of wrapped functions read it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import inspect
import sys
import threading
from typing import Any, Callable, Mapping

import tensorflow as tf
from tensorflow.python.framework import importer
from tensorflow.python.framework import ops as tf_ops

from crossgrad.tf1 import legacy
from crossgrad.tf1 import op_types

# This thread's (and asyncio task's) open maps, innermost last; whether it is in a wrapper.
_MAPS: contextvars.ContextVar[tuple[dict[str, tuple[Callable[..., Any], str]], ...]] = (
    contextvars.ContextVar("crossgrad.tf1.overrides.maps", default=()))
_BUSY = contextvars.ContextVar("crossgrad.tf1.overrides.busy", default=False)
_lock = threading.Lock()
_open = 0  # Scopes open in all threads; the TF functions stay wrapped while any is.
_restore: list[tuple[Any, str, Any]] = []  # (module, attribute, original) to put back.
_native_names: dict[Callable[..., Any], str] = {}  # Gradient -> its tf.RegisterGradient name.
_table = None  # id(original) -> (original, wrapper) for every TF function wrapped.
_found: tuple[int, list] = (-1, [])  # (len(sys.modules) when searched, the bindings found).


@contextlib.contextmanager
def _busy():
  """Inside a wrapper: ops made here (the op itself, its gradient) are TF's plain ones."""
  token = _BUSY.set(True)
  try:
    yield
  finally:
    _BUSY.reset(token)


def _active(op_type: str):
  """The innermost (gradient, label) for ``op_type`` in this thread, or None."""
  if _BUSY.get():
    return None
  return next((m[op_type] for m in reversed(_MAPS.get()) if op_type in m), None)


class override_map(contextlib.ContextDecorator):  # pylint: disable=invalid-name
  """TF2 form of ``graph.gradient_override_map({"Sign": "Identity"})``.

  A context manager or decorator: ops of the listed types made inside it (eagerly, while
  tracing a `tf.function`, under XLA, in a `tf.compat.v1` graph, or imported with
  `tf.import_graph_def`) get the legacy gradient. Values are gradient functions
  ``grad(op, *grads)`` or names registered with `tf.RegisterGradient` ("Identity", "Add",
  "GuidedRelu"). As in TF1, ops made outside the scope, and `tf.function` traces made
  before it, keep their gradients. The TF functions stay wrapped process-wide while any
  scope is open, but each thread only sees its own scopes.
  """

  def __init__(self, mapping: Mapping[str, Any]):
    self.mapping = {}
    for name, grad in mapping.items():
      entry = (legacy.resolve_grad(grad, op=name), grad if isinstance(grad, str) else
               legacy.qualname(grad))
      for tf_type in op_types.get(name).all_tf_types:
        self.mapping[tf_type] = entry

  def __enter__(self):
    _install()
    _MAPS.set(_MAPS.get() + (self.mapping,))
    return self

  def __exit__(self, *exc):
    _MAPS.set(_MAPS.get()[:-1])  # Scopes nest: this one is the innermost.
    _uninstall()
    return False


# Creating the ops.


def _grad_in_graph(op_type, grad, label, inputs, outputs, bound, upstream):
  """The legacy gradient as graph code: in a graph it reads the real op; eagerly, a
  `LegacyOp` with the attrs gradients read, in a traced graph (`legacy.call_grad_in_graph`)."""
  op_name = f"{op_type} overridden by {label}"
  if not tf.executing_eagerly():
    return legacy.host_free_under_xla(op_name, f"the gradient {legacy.qualname(grad)}",
                                      legacy.call_grad, grad, outputs.op, upstream,
                                      len(inputs), op_name)
  truncate = bool(bound.arguments.get("Truncate", False))

  def make_op(ins, outs):
    attrs = {"T": ins[0].dtype}
    if op_type == "Cast":
      attrs.update(SrcT=ins[0].dtype, DstT=outs[0].dtype, Truncate=truncate)
    return legacy.LegacyOp(op_type, ins, outs, op_type=op_type, attrs=attrs)

  return legacy.call_grad_in_graph(grad, make_op, inputs, [outputs], upstream, op_name,
                                   key=(op_type, truncate))


def _overridden(op_type, entry, original, bound, names, tensors):
  grad, label = entry

  @tf.custom_gradient
  def core(*inputs):
    bound.arguments.update(zip(names, inputs))
    outputs = original(*bound.args, **bound.kwargs)

    def backward(*upstream):
      with _busy():
        return _grad_in_graph(op_type, grad, label, inputs, outputs, bound, upstream)

    return outputs, backward

  with _busy():
    return core(*tensors)


def _wrap(op_type: str, n_inputs: int, original: Callable[..., Any]) -> Callable[..., Any]:
  signature = inspect.signature(original)
  names = list(signature.parameters)[:n_inputs]

  @functools.wraps(original)
  def wrapper(*args, **kwargs):
    entry = _active(op_type)
    if entry is None:
      return original(*args, **kwargs)
    bound = signature.bind(*args, **kwargs)
    values = [bound.arguments[n] for n in names]
    hint = next((v.dtype for v in values if hasattr(v, "dtype")), None)
    tensors = [tf.convert_to_tensor(v, dtype_hint=hint) for v in values]
    if not any(t.dtype.is_floating for t in tensors):  # Shape arithmetic: no gradient.
      return original(*args, **kwargs)
    return _overridden(op_type, entry, original, bound, names, tensors)

  return wrapper


def _bindings(originals: dict[int, Any]) -> list[tuple[Any, str, Any]]:
  """Every (module, attribute) of loaded TensorFlow and Keras modules holding an original
  (``tf.nn.relu`` is ``gen_nn_ops.relu`` itself, ``math_ops.mul`` is ``gen_math_ops.mul``)."""
  found = []
  for name, module in list(sys.modules.items()):
    if module is None or not name.startswith(("tensorflow", "keras", "tf_keras")):
      continue
    for attribute, value in list(getattr(module, "__dict__", {}).items()):
      if id(value) in originals and value is originals[id(value)]:
        found.append((module, attribute, value))
  return found


def _wrapped_import(original):
  @functools.wraps(original)
  def wrapper(*args, **kwargs):
    native = {t: _native_name(*entry) for m in _MAPS.get() for t, entry in m.items()}
    if not native or _BUSY.get():
      return original(*args, **kwargs)
    with tf_ops.get_default_graph().gradient_override_map(native):
      return original(*args, **kwargs)

  return wrapper


def _registered(name: str) -> Any:
  try:
    return tf_ops._gradient_registry.lookup(name)  # pylint: disable=protected-access
  except LookupError:
    return None


def _native_name(grad: Callable[..., Any], label: str) -> str:
  """The name `tf.gradients` looks ``grad`` up by: its own, or one registered once."""
  if _registered(label) is grad:
    return label
  if grad not in _native_names:
    n = len(_native_names)
    while _registered(f"CrossgradOverride{n}") is not None:  # This module was reloaded.
      n += 1
    tf.RegisterGradient(f"CrossgradOverride{n}")(grad)
    _native_names[grad] = f"CrossgradOverride{n}"
  return _native_names[grad]


def _replacements() -> dict[int, tuple[Callable[..., Any], Callable[..., Any]]]:
  """``id(original) -> (original, wrapper)`` for each op creator and the GraphDef importer."""
  table = {}
  for spec in op_types.OP_TYPES.values():
    for module_name, attribute in spec.creators:
      original = getattr(importlib.import_module(module_name), attribute)
      table[id(original)] = (original, _wrap(spec.name, len(spec.inputs), original))
  original = importer._import_graph_def_internal  # pylint: disable=protected-access
  table[id(original)] = (original, _wrapped_import(original))
  return table


def _patches() -> list[tuple[Any, str, Any, Any]]:
  """(module, attribute, original, wrapper) to apply: the wrappers are made once, the
  bindings searched again only when modules were imported since (they may bind more)."""
  global _table, _found
  if _table is None:
    _table = _replacements()
  if _found[0] != len(sys.modules):
    _found = (len(sys.modules), _bindings({k: v[0] for k, v in _table.items()}))
  return [(module, attribute, original, _table[id(original)][1])
          for module, attribute, original in _found[1]]


def _install():
  global _open
  with _lock:
    _open += 1
    if _open == 1:
      for module, attribute, original, wrapper in _patches():
        setattr(module, attribute, wrapper)
        _restore.append((module, attribute, original))


def _uninstall():
  global _open
  with _lock:
    _open -= 1
    while not _open and _restore:
      module, attribute, original = _restore.pop()
      setattr(module, attribute, original)
