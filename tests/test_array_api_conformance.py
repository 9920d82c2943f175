"""A fast subset of the Array API test suite: each backend's xp fails nothing NumPy passes.

Runs when ``CROSSGRAD_ARRAY_API_TESTS`` names a checkout of data-apis/array-api-tests (with
data-apis/array-api as its ``array-api/`` folder); skipped with that reason otherwise. The
whole suite runs with ``python -m crossgrad.benchmarks.array_api_conformance``.
"""

import os

import pytest

import crossgrad as cg
from crossgrad.benchmarks import array_api_conformance as conformance

SUITE = os.environ.get("CROSSGRAD_ARRAY_API_TESTS")
FILES = ("test_signatures.py", "test_constants.py", "test_data_type_functions.py",
         "test_sorting_functions.py", "test_inspection_functions.py")

pytestmark = pytest.mark.skipif(
    not SUITE, reason="set CROSSGRAD_ARRAY_API_TESTS to a checkout of data-apis/array-api-tests "
    "(with data-apis/array-api as its array-api/ folder) to run the conformance subset")


def _run(namespace):
  """The subset; tensorflow with shapes read as tuples by the suite's tools (its measured row:
  tf.Tensor.shape is a TensorShape, which ndindex refuses in test_broadcast_to)."""
  adapted = conformance.TUPLE_SHAPES.get(namespace)
  plugins = adapted[1:] if adapted else ()
  return conformance.run_suite(SUITE, namespace, "functions", max_examples=3, files=FILES,
                               timeout_s=900, plugins=plugins)


@pytest.fixture(name="native", scope="module")
def _native():
  return _run("numpy-native")


@pytest.mark.parametrize("backend", ["numpy", "jax", "tensorflow", "torch"])
def test_backend_fails_nothing_numpy_passes(native, backend):
  if getattr(cg, backend).xp.missing:
    pytest.skip(f"the {backend} namespace does not implement the whole standard yet")
  ours = _run(backend)
  assert native["passed"] > 150  # The subset ran (signatures alone are 190 tests).
  regressions = ({f["test"] for f in ours["failures"]}
                 - {f["test"] for f in native["failures"]})
  assert not regressions, ours["failures"]
  assert ours["passed"] >= native["passed"]
