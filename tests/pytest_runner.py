"""Entry point of the Bazel py_test targets: runs the test file given as argument under pytest."""

import sys

import pytest

if __name__ == "__main__":
  sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
