"""``a @ b`` between op-body arrays under ``torch.compile``: a compatibility shim for Dynamo.

Dynamo traces every binary operator of a user-defined object through the type's dunders
(its variable for such objects implements CPython's number slots, ``SLOT1BIN``) except ``@``:
torch 2.13 has no ``nb_matrix_multiply`` there and no ``BuiltinVariable.call_matmul``, so
``x @ w`` between two `array_object.Array` fails with "Failed to trace builtin operator
`matmul`". `install` gives Dynamo that handler with Python's semantics (``__matmul__``, then
the other operand's ``__rmatmul__``, else TypeError) for ``@`` with an operand of the given
type only; any other ``@`` is left to Dynamo as it was. It installs nothing where the running
torch has a ``call_matmul`` of its own or lacks the internals it uses. Dynamo takes seconds
to import, so `install_when_dynamo_loads` waits for Dynamo's import rather than forcing it.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import operator
import sys

_DYNAMO_BUILTIN = "torch._dynamo.variables.builtin"


def install(array_type: type) -> bool:
  """Teaches Dynamo ``@`` with an ``array_type`` operand; whether it did (see the module
  docstring)."""
  # pylint: disable=g-import-not-at-top
  try:
    from torch._dynamo.variables import builtin, object_protocol, user_defined
  except ImportError:  # A torch whose Dynamo is laid out otherwise (torch 2.11 has no
    return False       # object_protocol): Dynamo as it is.
  variable = builtin.BuiltinVariable
  objects = getattr(user_defined, "UserDefinedObjectVariable", None)
  slots = getattr(object_protocol, "PyNumberSlots", None)
  if (hasattr(variable, "call_matmul") or not hasattr(objects, "SLOT1BIN")
      or not hasattr(slots, "NB_MATRIX_MULTIPLY")
      or not hasattr(object_protocol, "binop_type_error")):
    return False

  def call_matmul(self, tx, a, b):
    del self
    ours = [v for v in (a, b) if isinstance(v, objects) and v.python_type() is array_type]
    if not ours:
      return None  # Dynamo's own handling (its "Failed to trace builtin operator").
    left = ours[0] is a
    result = ours[0].SLOT1BIN(tx, b if left else a, "__matmul__", "__rmatmul__",
                              nb_slot=slots.NB_MATRIX_MULTIPLY, reverse=not left)
    if object_protocol.is_nb_not_implemented(result):
      object_protocol.binop_type_error(tx, a, b, "@")
    return result

  variable.call_matmul = call_matmul
  cache = variable.call_function_handler_cache  # Handlers made before, without this one.
  for key in [k for k in cache if k[0] is operator.matmul]:
    del cache[key]
  return True


class _AfterImport(importlib.abc.MetaPathFinder):
  """Runs ``then()`` once module ``name`` has been imported (it finds no module itself)."""

  def __init__(self, name: str, then):
    self._name, self._then = name, then

  def find_spec(self, fullname, path, target=None):
    del path, target
    if fullname != self._name:
      return None
    sys.meta_path.remove(self)
    spec = importlib.util.find_spec(fullname)
    run_module, then = spec.loader.exec_module, self._then

    def exec_module(module):
      run_module(module)
      then()

    spec.loader.exec_module = exec_module
    return spec


def install_when_dynamo_loads(array_type: type) -> None:
  """`install` now if Dynamo is imported, else as soon as it is."""
  if _DYNAMO_BUILTIN in sys.modules:
    install(array_type)
  else:
    sys.meta_path.insert(0, _AfterImport(_DYNAMO_BUILTIN, lambda: install(array_type)))
