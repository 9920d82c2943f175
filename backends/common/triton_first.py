"""Imports Triton, where it is installed, just before the first framework that brings its
own LLVM.

TensorFlow and JAX's XLA bring LLVM, and so does Triton; loading Triton's after
TensorFlow's aborts the process ("Option ... registered more than once"), and
torch.compile imports Triton on first use. Loaded first, Triton and the others coexist.
`install` (called by ``import crossgrad``) imports nothing: it puts a finder on
`sys.meta_path` that imports Triton when the first of TensorFlow, JAX or jaxlib is looked
up (imported, or probed with `importlib.util.find_spec`), so only a process that loads
one pays Triton's import (about half a second). Triton imports no framework. A carrier
loaded before `install` is past repair: see docs/kernels.md.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys

_LLVM_CARRIERS = ("tensorflow", "jax", "jaxlib")


def _import_triton() -> None:
  if "triton" not in sys.modules and importlib.util.find_spec("triton") is not None:
    import triton  # pylint: disable=g-import-not-at-top,unused-import  # noqa: F401


class _BeforeLLVM:  # A `sys.meta_path` finder (importlib.abc's import costs 30 ms).
  """Imports Triton when an LLVM carrier is looked up, then removes itself; finds nothing."""

  def find_spec(self, fullname, path, target=None):
    del path, target
    if fullname in _LLVM_CARRIERS:
      with contextlib.suppress(ValueError):  # Another thread's lookup removed it.
        sys.meta_path.remove(self)
      _import_triton()
    return None


def install() -> None:
  """Imports Triton before the first LLVM carrier; nothing if one is loaded already."""
  if not any(name in sys.modules for name in _LLVM_CARRIERS):
    sys.meta_path.insert(0, _BeforeLLVM())
