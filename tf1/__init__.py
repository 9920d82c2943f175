r"""TF1 gradient overrides in TF2 and JAX: drop-ins, `override_map`, and ports to crossgrad ops.

TF1 projects carry two idioms. The seeds' py_func helper::

  rnd_name = 'PyFuncGrad' + str(np.random.randint(0, 1E+8))
  tf.RegisterGradient(rnd_name)(grad)
  with graph.gradient_override_map({"PyFunc": rnd_name}):
    return tf.py_func(func, inp, Tout, stateful=stateful, name=name)

and overrides of built-in op types (``{"Sign": "Identity"}`` in binarized nets,
``{"Relu": "GuidedRelu"}`` in guided backprop). `py_func`, `Defun` and `override_map` run
that code unchanged in TF2 eager, under `tf.function` and in `tf.compat.v1` graphs. `port`
turns a legacy pair into a registry `OpDef`, so it also gets a JAX version and the
cross-check: an op type's override (``port(name, "Sign", "Identity")``) or a TF forward
becomes a native op everywhere (XLA, `jax.jit`, `vmap`, second derivatives); a NumPy
forward stays a host call. The names below import TensorFlow on first use; the package
itself, `op_types` and the `scan` tool do not, so scanning a tree needs no TensorFlow.
"""

import importlib
import sys
import types

# Each public name -> the module of this package that defines it (loaded on first use).
_EXPORTS = {
    "Defun": "drop_in", "legacy_vjp": "drop_in", "py_func": "drop_in",
    "PYFUNC_TYPES": "legacy", "LegacyOp": "legacy", "call_grad": "legacy",
    "OP_TYPES": "op_types", "override_map": "overrides",
    "GRAPH_STATE_NAMES": "port", "JAX_BACKWARDS": "port", "forward_input_names": "port",
    "port": "port",
}
__all__ = tuple(sorted(_EXPORTS))


def __getattr__(name: str):
  if name not in _EXPORTS:
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
  value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(_EXPORTS))


class _Package(types.ModuleType):
  """Keeps ``crossgrad.tf1.port`` the function: importing the submodule of the same name
  would otherwise bind the module there (the import system sets it on its package)."""

  def __setattr__(self, name, value):
    if name in _EXPORTS and isinstance(value, types.ModuleType):
      return
    super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
