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
forward stays a host call. Importing this package imports TensorFlow.
"""

from crossgrad.tf1.drop_in import Defun
from crossgrad.tf1.drop_in import legacy_vjp
from crossgrad.tf1.drop_in import py_func
from crossgrad.tf1.legacy import PYFUNC_TYPES
from crossgrad.tf1.legacy import LegacyOp
from crossgrad.tf1.legacy import call_grad
from crossgrad.tf1.op_types import OP_TYPES
from crossgrad.tf1.overrides import override_map
from crossgrad.tf1.port import GRAPH_STATE_NAMES
from crossgrad.tf1.port import JAX_BACKWARDS
from crossgrad.tf1.port import forward_input_names
from crossgrad.tf1.port import port

__all__ = ("Defun", "GRAPH_STATE_NAMES", "JAX_BACKWARDS", "LegacyOp", "OP_TYPES",
           "PYFUNC_TYPES", "call_grad", "forward_input_names", "legacy_vjp", "override_map",
           "port", "py_func")
