"""crossgrad: define a custom-gradient op once; get TensorFlow, JAX, PyTorch and NumPy
versions, cross-checked.

``crossgrad.tensorflow``, ``crossgrad.jax``, ``crossgrad.torch`` and ``crossgrad.keras``
import their framework on first access (never while torch.compile compiles: use them once
before); ``import crossgrad`` itself imports none. Once Keras is imported, crossgrad's Keras
layers are registered with it (`crossgrad.api.keras_hook`).
"""

from __future__ import annotations

import importlib
import sys

from crossgrad.backends import triton_first as _triton_first  # Before any LLVM carrier.
from crossgrad.api import keras_hook as _keras_hook
from crossgrad.api import numpy
from crossgrad.checker.engine import cross_check
from crossgrad.checker.report import Report
from crossgrad.checker.report import Row
from crossgrad.registry import ops as _builtin_ops  # Registers the built-in ops.
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.kernels import register_kernel
from crossgrad.registry.kernels import unregister_kernel
from crossgrad.registry.op_registry import get
from crossgrad.registry.op_registry import names
from crossgrad.registry.op_registry import register
from crossgrad.registry.op_registry import unregister
from crossgrad.registry.opdef import OpDef
from crossgrad.registry.validation import ArraySpec
from crossgrad.sparse.data import SparseData

__version__ = "0.1.0"

_LAZY_BACKENDS = ("tensorflow", "jax", "torch")
_LAZY = (*_LAZY_BACKENDS, "keras")

__all__ = (
    "ArraySpec",
    "CrossgradError",
    "OpDef",
    "Report",
    "Row",
    "SparseData",
    "cross_check",
    "get",
    "jax",
    "keras",
    "names",
    "numpy",
    "port",
    "register",
    "register_kernel",
    "tensorflow",
    "torch",
    "unregister",
    "unregister_kernel",
)

del _builtin_ops
_keras_hook.install()


def _torch_compiler():
  """``torch.compiler`` if PyTorch is imported (never imported here), else None."""
  return getattr(sys.modules.get("torch"), "compiler", None)


def _torch_compiling(compiler) -> bool:
  """torch.compile at work: Dynamo tracing, or AOTAutograd and Inductor compiling a graph,
  a backward graph included (compiled at the first backward pass, where
  `torch.compiler.is_compiling` is False but a tracing context is set)."""
  guards = sys.modules.get("torch._guards")
  return compiler.is_compiling() or (guards is not None
                                     and guards.TracingContext.try_get() is not None)


def _load(name: str):
  if name in _LAZY_BACKENDS:
    from crossgrad.backends import base  # pylint: disable=g-import-not-at-top
    base.load(name)  # A clear error if the framework is missing.
  try:
    module = importlib.import_module(f"crossgrad.api.{name}")
  except ImportError as e:
    if name in _LAZY_BACKENDS:
      raise
    raise CrossgradError(f"crossgrad.{name} needs a framework that is not installed ({e})",
                         backend=name, argument=f"crossgrad.{name}",
                         hint=f'Install it with: pip install "crossgrad[{name}]"') from e
  globals()[name] = module
  return module


def __getattr__(name: str):
  if name == "port":  # crossgrad.port(obj): the porting tool, callable (docs/porting.md).
    return importlib.import_module("crossgrad.port")
  if name not in _LAZY:
    raise AttributeError(f"module 'crossgrad' has no attribute {name!r}")
  compiler = _torch_compiler()
  if compiler is None:
    return _load(name)
  if _torch_compiling(compiler):
    # Inductor's cache-key pickler looks for the module holding the `torch` module
    # (pickle.whichmodule probes every module's attribute ``torch``) and takes an
    # AttributeError as "not here": importing an API module there would make ops inside
    # the compiler, which torch refuses (the cache would be bypassed) or allows only
    # as a side effect of pickling (the backward graph).
    raise AttributeError(
        f"crossgrad.{name} is imported on first use, which cannot happen while torch.compile "
        f"compiles: use crossgrad.{name} once before compiling")
  # Dynamo tracing a first use: the import runs outside the trace (a graph break).
  return compiler.disable(_load)(name)


def __dir__():
  return sorted(set(globals()) | set(_LAZY) | {"port"})
