"""Smoke run of benchmarks/tf1_port_overhead.py: each ported variant computes the built-in
op's loss (no timings asserted)."""

import numpy as np

from crossgrad.benchmarks import tf1_port_overhead as bench


def test_ported_and_builtin_variants_agree():
  runs = bench.variants(size=8)
  for mode in ("tf_eager", "tf_graph", "jax_jit"):
    builtin = runs[f"{mode}/builtin"]()
    expected = builtin[0] if isinstance(builtin, tuple) else builtin
    for label in ("ported", "native"):
      ported = runs[f"{mode}/{label}"]()
      loss = ported[0] if isinstance(ported, tuple) else ported
      np.testing.assert_allclose(np.asarray(loss), np.asarray(expected), rtol=1e-6)
  assert set(bench.measure(size=8, repeats=2)) == set(runs)
