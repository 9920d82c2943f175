"""Imported before TensorFlow: loads Triton first where it is installed.

Triton and TensorFlow each bring LLVM; loading Triton's after TensorFlow's aborts the
process ("Option ... registered more than once"), and torch.compile imports Triton on first
use. In the other order both load. Importing Triton costs about half a second.
"""

import importlib.util
import sys

if "tensorflow" not in sys.modules and importlib.util.find_spec("triton") is not None:
  import triton  # pylint: disable=unused-import  # noqa: F401
