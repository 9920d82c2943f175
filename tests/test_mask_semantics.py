"""Masks select: a dropped element is exactly 0 and passes exactly 0 back, in every backend
and mode, whatever value it holds (inf and NaN included).

XLA rewrites ``convert(mask) * x`` into ``select(mask, x, 0)``, so an op that multiplies by
a 0/1 mask gives NaN (0 * inf) in NumPy and eager frameworks but 0 under XLA - a
cross-check that is red on one CPU and green on another. The built-in masks are
written as ``xp.where``; these properties hold them to it on special values drawn by
Hypothesis, against the formula written directly in NumPy.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import crossgrad as cg
from crossgrad.backends.common import base

SPECIALS = (np.inf, -np.inf, np.nan, np.finfo(np.float32).max, -0.0)
SHAPES = {"channels": ((2, 3, 1), (2, 3, 4)), "same": ((5,), (5,))}


def _settings(backend_mode):
  """Every backend with every mode and transformation it runs (compiled modes included)."""
  module = base.load(backend_mode[0])
  return module, backend_mode[1]


def _all_modes():
  out = []
  for name in ["numpy", *base.default_backends()]:
    module = base.load(name)
    out += [(name, mode) for mode in module.MODES]
    out += [(name, t) for t in getattr(module, "TRANSFORMS", ())]
  return out


def _run(module, mode, op, params, inputs, cotangent):
  """Outputs and input cotangents of ``op`` in ``mode``; a transformation runs a batch of
  two copies of the example and returns the first (batched_vjp: the outputs at the first,
  and its VJP of the two cotangents)."""
  if mode in module.MODES:
    return module.evaluate(op, params, inputs, cotangent, device="cpu:0", mode=mode)
  batched = module.evaluate_transformed(op, params, [np.stack([x, x]) for x in inputs],
                                        [np.stack([c, c]) for c in cotangent],
                                        device="cpu:0", transforms=[mode])[mode]
  outs = batched[0] if mode == "batched_vjp" else tuple(o[0] for o in batched[0])
  return outs, tuple(None if c is None else c[0] for c in batched[1])


def _with_specials(data, x):
  """``x`` with special values written at Hypothesis' choice of places."""
  x = x.copy()
  flat = x.reshape(-1)
  for i in data.draw(st.lists(st.integers(0, flat.size - 1), min_size=1, max_size=flat.size)):
    flat[i] = data.draw(st.sampled_from(SPECIALS))
  return x


@pytest.mark.parametrize("backend_mode", _all_modes(), ids="-".join)
@pytest.mark.parametrize("shapes", SHAPES.values(), ids=SHAPES.keys())
@settings(max_examples=6, deadline=None, derandomize=True)
@given(data=st.data())
def test_bernoulli_mask_drops_to_exact_zeros(backend_mode, shapes, data):
  module, mode = _settings(backend_mode)
  rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
  p = rng.uniform(0.1, 0.9, shapes[0]).astype(np.float32)
  u = rng.uniform(0.0, 1.0, shapes[0]).astype(np.float32)
  features = _with_specials(data, rng.standard_normal(shapes[1]).astype(np.float32))
  g = _with_specials(data, rng.standard_normal(shapes[1]).astype(np.float32))
  (out,), (_, d_features, _) = _run(module, mode, cg.get("bernoulli_mask"), {},
                                    [p, features, u], [g])
  keep = np.broadcast_to(u < p, shapes[1])
  np.testing.assert_array_equal(out, np.where(keep, features, np.float32(0)))
  np.testing.assert_array_equal(d_features, np.where(keep, g, np.float32(0)))


@pytest.mark.parametrize("backend_mode", _all_modes(), ids="-".join)
@settings(max_examples=4, deadline=None, derandomize=True)
@given(data=st.data())
def test_submanifold_ground_state_selects(backend_mode, data):
  """Entries off the ground state are M's rows exactly, whatever the ground state holds;
  d ground_state sums only the cotangents of entries that read it."""
  module, mode = _settings(backend_mode)
  rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
  op = cg.get("submanifold_q")
  m, ground_state, src = op.sample(rng)  # A rulebook's table: ground-state entries included.
  m = m.astype(np.float32)
  ground_state = _with_specials(data, ground_state.astype(np.float32))
  (a, n_in), kk = m.shape, src.shape[1]
  flat = src.reshape(-1)
  by_entry = rng.standard_normal((a * kk, n_in)).astype(np.float32)
  # Special cotangents only on entries that do not read the ground state: none may leak.
  by_entry[flat != a] = _with_specials(data, by_entry[flat != a])
  g = by_entry.reshape(a, kk * n_in)
  (q,), (_, d_ground, _) = _run(module, mode, op, {},
                                [m, ground_state, src], [g])
  on_m = (flat >= 0) & (flat < a)
  assert (flat == a).any() and on_m.any()
  expected = np.zeros((a * kk, n_in), np.float32)
  expected[on_m] = m[flat[on_m]]
  expected[flat == a] = ground_state
  np.testing.assert_array_equal(q, expected.reshape(a, kk * n_in))
  terms = by_entry[flat == a].astype(np.float64)
  np.testing.assert_allclose(d_ground, terms.sum(axis=0), rtol=0,
                             atol=1e-6 * np.abs(terms).sum(axis=0).max())
