"""crossgrad: define a custom-gradient op once; get TensorFlow, JAX, PyTorch and NumPy
versions, cross-checked.

``import crossgrad`` costs about NumPy's own import: it loads the registry (the built-in
ops included) and nothing else. ``crossgrad.tensorflow``, ``crossgrad.jax``,
``crossgrad.torch`` and ``crossgrad.keras`` import their framework on first access (never
while torch.compile compiles: use them once before); ``cross_check``, `Report`, `Row`,
`SparseData`, ``crossgrad.numpy`` and ``crossgrad.sparse`` load on first access too. Once
Keras is imported, crossgrad's Keras layers are registered with it
(`crossgrad.api.keras_hook`); Triton, where installed, is imported just before the first
framework that brings its own LLVM (`crossgrad.backends.common.triton_first`).
"""

from __future__ import annotations

import importlib
import sys
import typing

from crossgrad.api import keras_hook as _keras_hook
from crossgrad.api import submodules as _submodules
from crossgrad.backends.common import triton_first as _triton_first
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
from crossgrad.registry.version import __version__

if typing.TYPE_CHECKING:  # The lazy names below, for type checkers and the layering tests.
  from crossgrad import port
  from crossgrad import sparse
  from crossgrad.api import numpy
  from crossgrad.checker.engine import cross_check
  from crossgrad.checker.report import Report
  from crossgrad.checker.report import Row
  from crossgrad.sparse.data import SparseData

_LAZY_BACKENDS = ("tensorflow", "jax", "torch")
_LAZY_FRAMEWORKS = (*_LAZY_BACKENDS, "keras")
# Framework-free names loaded on first access: name -> (module, attribute; None: the module).
_LAZY_NAMES = {
    "Report": ("crossgrad.checker.report", "Report"),
    "Row": ("crossgrad.checker.report", "Row"),
    "SparseData": ("crossgrad.sparse.data", "SparseData"),
    "cross_check": ("crossgrad.checker.engine", "cross_check"),
    "numpy": ("crossgrad.api.numpy", None),
    "port": ("crossgrad.port", None),  # Callable: crossgrad.port(obj) (docs/porting.md).
    "sparse": ("crossgrad.sparse", None),
}

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
_triton_first.install()
_keras_hook.install("crossgrad.layers")  # Imports crossgrad.api.keras and every layer.
_submodules.install(_LAZY_FRAMEWORKS)


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
    from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
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


def _load_name(name: str):
  module_name, attribute = _LAZY_NAMES[name]
  module = importlib.import_module(module_name)
  value = module if attribute is None else getattr(module, attribute)
  globals()[name] = value
  return value


def __getattr__(name: str):
  if name in _LAZY_NAMES:
    return _load_name(name)
  if name not in _LAZY_FRAMEWORKS:
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
  return sorted(set(globals()) | set(_LAZY_FRAMEWORKS) | set(_LAZY_NAMES))
