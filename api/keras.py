"""``crossgrad.keras``: registered ops as Keras 3 operations and layers, on every Keras backend.

    import crossgrad as cg
    quantize = cg.keras.get("ste_quantize", scale=0.5)   # a keras.Operation
    y = quantize(x)                                      # backend tensors or KerasTensors
    layer = cg.keras.OpLayer("ste_quantize", scale=0.5)  # the same op as a serializable layer

Keras runs one backend per process (``KERAS_BACKEND=tensorflow|jax|torch``); a call runs the
op crossgrad emits for that framework (`crossgrad.tensorflow.get`, `crossgrad.jax.get`,
`crossgrad.torch.get`), so every gradient Keras takes (``model.fit``, ``jit_compile=True``,
`tf.GradientTape`, `jax.grad`, ``loss.backward()``) is the op's backward. On `KerasTensor`s
(the functional API) Keras traces the call symbolically (a TF graph, `jax.eval_shape`, torch
meta tensors): output shapes and dtypes come without running the op's numbers.
"""

from __future__ import annotations

import importlib
from typing import Any

import keras

from crossgrad.registry import op_registry
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

NAME = "keras"
BACKENDS = ("tensorflow", "jax", "torch")
# `keras.layers.Layer`'s own keyword arguments; `OpLayer` hands every other one to the op.
_LAYER_ARGUMENTS = frozenset({"name", "dtype", "trainable", "autocast", "input_shape",
                              "input_dim", "batch_size", "batch_input_shape",
                              "activity_regularizer"})


def framework():
  """crossgrad's module for the backend Keras runs: `crossgrad.tensorflow`, `.jax` or `.torch`."""
  backend = keras.backend.backend()
  if backend not in BACKENDS:
    raise CrossgradError("Keras runs a backend crossgrad has no ops for", backend=NAME,
                         argument="KERAS_BACKEND", expected=" or ".join(BACKENDS),
                         actual=repr(backend))
  return importlib.import_module(f"crossgrad.api.{backend}")


def tensor(x: Any) -> Any:
  """A Keras variable's value as the backend's tensor (read inside the current scope, e.g.
  `stateless_call`'s); anything else unchanged."""
  return x.value if isinstance(x, keras.Variable) else x


def _hashable(value: Any) -> Any:
  """JSON turns tuples into lists: a parameter read back from a config is a tuple again."""
  return tuple(map(_hashable, value)) if isinstance(value, list) else value


def _lookup(op: str | OpDef, where: str) -> OpDef:
  if isinstance(op, OpDef):
    return op
  try:
    return op_registry.get(op)
  except CrossgradError as e:
    raise CrossgradError(
        "unknown op", op=str(op), backend=NAME, argument=where,
        expected="a registered op", actual=repr(op),
        hint="Import the module that registers it (as --module does for the check) before "
             f"building or loading the model. {e.hint or ''}".strip()) from None


@keras.saving.register_keras_serializable(package="crossgrad")
class Operation(keras.Operation):
  """One registered op with fixed static parameters, as a Keras operation (`get` makes
  them); serializable as a node of a functional model, like `OpLayer`."""

  def __init__(self, op: OpDef, params: dict):
    super().__init__(name=f"crossgrad_{op.name.replace('.', '_')}")
    self.op, self.params = op, params

  def call(self, *inputs):
    return framework().get(self.op, **self.params)(*map(tensor, inputs))

  def get_config(self):
    return {"op": self.op.name, **self.params}

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    return get(_lookup(config.pop("op"), "Operation(op=...)"), **config)


def get(op: str | OpDef, /, **params: Any) -> Operation:
  """``op`` (a name or an `OpDef`) with static ``params`` as a new `keras.Operation` (each
  a node of its own in a functional graph; the framework's function behind it is cached)."""
  opdef = _lookup(op, "op")
  return Operation(opdef, opdef.resolve_params({k: _hashable(v) for k, v in params.items()},
                                               NAME))


@keras.saving.register_keras_serializable(package="crossgrad")
class OpLayer(keras.layers.Layer):
  """Any registered op as a Keras layer: ``OpLayer("ste_quantize", scale=0.5)``.

  Keyword arguments that are the op's static parameters configure the op, the others
  (``name``, ``dtype``, ...) the layer. The layer has no weights; ``layer(*inputs)`` is the
  op. ``get_config`` names the op, so a saved model loads wherever that op is registered
  (the built-in ops are after ``import crossgrad``; import a module's own ops first).
  """

  def __init__(self, op: str, **kwargs: Any):
    opdef = _lookup(op, "OpLayer(op=...)")
    params = {k: kwargs.pop(k) for k in list(kwargs) if k not in _LAYER_ARGUMENTS}
    super().__init__(**kwargs)
    self.operation = get(opdef, **params)
    self.op_name = opdef.name
    self.params = {k: _hashable(v) for k, v in params.items()}

  def call(self, *inputs):
    return self.operation(*inputs)

  def compute_output_spec(self, *inputs):
    return self.operation.compute_output_spec(*inputs)

  def get_config(self):
    return {**super().get_config(), "op": self.op_name, **self.params}

  @classmethod
  def from_config(cls, config):
    _lookup(config["op"], "OpLayer(op=...)")  # Raised as is, not as Keras' TypeError.
    return super().from_config(config)


__all__ = ("BACKENDS", "NAME", "OpLayer", "Operation", "framework", "get", "tensor")
