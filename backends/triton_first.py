"""Loads Triton, where it is installed, before any framework that brings its own LLVM.

Triton, TensorFlow and JAX's XLA each bring LLVM; loading Triton's after one of the others
aborts the process ("Option ... registered more than once"), and torch.compile imports
Triton on first use. Loaded first, Triton and the others coexist. ``import crossgrad`` and
the TensorFlow backend import this module; Triton imports no framework.
"""

import importlib.util
import sys

_LLVM_CARRIERS = ("tensorflow", "jax", "jaxlib")

if (not any(name in sys.modules for name in _LLVM_CARRIERS)
    and importlib.util.find_spec("triton") is not None):
  import triton  # pylint: disable=unused-import  # noqa: F401
