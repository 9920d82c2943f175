r"""Rulebook construction alone: crossgrad's grid-based builders against sort-based ones.

crossgrad builds a sparse-convolution rulebook with a scatter-min over the output grid
(the first candidate of each output site), a cumulative count and gathers, and a
submanifold rulebook with one scatter of row numbers into the ``h x w`` grid and one
gather per candidate (`crossgrad.sparse.rulebook`). The alternatives here are the usual
sort-based constructions, written directly in `jax.numpy`:

* sparse: ``jnp.unique(keys, size=capacity + 1, return_index=True, return_inverse=True)``
  over the ``a*f*f`` candidate keys, then an ``argsort`` of the first indices to put the
  output sites in sparse_cnn's first-appearance order (so both give identical rulebooks);
* submanifold: ``argsort`` of the ``a`` site keys and ``jnp.searchsorted`` of the
  ``a*f*f`` neighbour keys (binary search, ``method="scan_unrolled"`` and ``"sort"``).

Each variant is jitted and checked to give exactly crossgrad's arrays; times are medians of
interleaved warm calls. The better construction is the one the library keeps.

  python -m crossgrad.benchmarks.sparse_rulebook [--quick] [--json=out/sparse_rulebook.json]
"""

from __future__ import annotations

from typing import Sequence

from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.benchmarks import timing
from crossgrad.cli import usage
from crossgrad.sparse import rulebook


def sites(rng, shape, fraction) -> cg.SparseData:
  """Uniformly random active sites (NumPy), values from a normal distribution."""
  dense = np.zeros(shape, np.float32)
  active = rng.random(shape[:2]) < fraction
  dense[active] = rng.standard_normal((int(active.sum()), shape[2])).astype(np.float32)
  return cg.SparseData.from_dense(dense)


def conv_by_sort(h, n_valid, dense_shape, f: int, capacity: int):
  """(h_out, n_out, dst) of a stride-1 sparse rulebook, from `jnp.unique`."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  a, kk = h.shape[0], f * f
  ho, wo = dense_shape[0] - f + 1, dense_shape[1] - f + 1
  grid = ho * wo
  u = np.repeat(np.arange(f), f) - (f - 1)
  v = np.tile(np.arange(f), f) - (f - 1)
  i = (h[:, :1] + u).reshape(-1)
  j = (h[:, 1:] + v).reshape(-1)
  live = jnp.repeat(jnp.arange(a) < n_valid, kk)
  valid = live & (i >= 0) & (i < ho) & (j >= 0) & (j < wo)
  key = jnp.where(valid, i * wo + j, grid)
  unique, first, inverse = jnp.unique(key, size=capacity + 1, fill_value=grid,
                                      return_index=True, return_inverse=True)
  real = unique < grid
  order = jnp.argsort(jnp.where(real, first, a * kk))  # Seed order: by first appearance.
  rank = jnp.zeros(capacity + 1, jnp.int32).at[order].set(jnp.arange(capacity + 1,
                                                                      dtype=jnp.int32))
  out_row = rank[inverse.reshape(-1)]
  offset = np.tile(np.arange(kk - 1, -1, -1), a)
  n_out = jnp.sum(real).astype(jnp.int32)
  dst = jnp.where(valid & (out_row < capacity), out_row * kk + offset, -1).reshape(a, kk)
  picked = unique[order[:capacity]]
  keep = real[order[:capacity]]
  h_out = jnp.where(keep[:, None], jnp.stack([picked // wo, picked % wo], 1), -1)
  return h_out.astype(jnp.int32), n_out, dst.astype(jnp.int32)


def submanifold_by_sort(h, n_valid, dense_shape, f: int, method: str):
  """``src`` of a submanifold rulebook, from an argsort and `jnp.searchsorted`."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  a, kk, (height, width) = h.shape[0], f * f, dense_shape[:2]
  c = (f - 1) // 2
  live = jnp.arange(a) < n_valid
  keys = jnp.where(live, h[:, 0] * width + h[:, 1], height * width)
  order = jnp.argsort(keys)
  ordered = keys[order]
  i = h[:, :1] + (np.repeat(np.arange(f), f) - c)
  j = h[:, 1:] + (np.tile(np.arange(f), f) - c)
  inside = (i >= 0) & (i < height) & (j >= 0) & (j < width) & live[:, None]
  wanted = jnp.where(inside, i * width + j, -1)
  at = jnp.clip(jnp.searchsorted(ordered, wanted, method=method), 0, a - 1)
  found = ordered[at] == wanted
  return jnp.where(inside, jnp.where(found, order[at], a), -1).astype(jnp.int32)


def compare(shape, f: int, fraction: float, repeats: int, seed: int = 0) -> dict:
  """Median seconds of each construction (jitted JAX) on one random active set."""
  import jax  # pylint: disable=g-import-not-at-top
  x = sites(np.random.default_rng(seed), shape, fraction)
  capacity = rulebook.safe_capacity(x.capacity, x.dense_shape, f)
  h = jax.device_put(x.H)
  xp = cg.jax.xp
  grid_conv = jax.jit(lambda h: _arrays(rulebook.build(xp, h, x.n_valid, x.dense_shape, f,
                                                       capacity)))
  sort_conv = jax.jit(lambda h: conv_by_sort(h, x.n_valid, x.dense_shape, f, capacity))
  grid_sub = jax.jit(lambda h: rulebook.build_submanifold(xp, h, x.n_valid, x.dense_shape,
                                                          f).dst)
  fns = {"sparse/grid": grid_conv, "sparse/sort": sort_conv, "submanifold/grid": grid_sub}
  for method in ("scan_unrolled", "sort"):
    fns[f"submanifold/search_{method}"] = jax.jit(
        lambda h, m=method: submanifold_by_sort(h, x.n_valid, x.dense_shape, f, m))
  want_conv = [np.asarray(v) for v in grid_conv(h)]
  want_sub = np.asarray(grid_sub(h))
  for name, fn in fns.items():  # Every construction gives crossgrad's arrays exactly.
    got, want = fn(h), want_sub if name.startswith("submanifold") else want_conv
    if name.startswith("sparse"):
      n = int(want[1])
      same = (int(got[1]) == n and np.array_equal(np.asarray(got[0])[:n], want[0][:n])
              and np.array_equal(np.asarray(got[2]), want[2]))
    else:
      same = np.array_equal(np.asarray(got), want)
    if not same:
      raise AssertionError(f"{name} builds a different rulebook")
  times = timing.interleaved_medians(
      {name: (lambda fn=fn: jax.block_until_ready(fn(h))) for name, fn in fns.items()},
      repeats, warmup=2, warm=2)
  return {"shape": list(shape), "f": f, "fraction": fraction, "active": int(x.n_valid),
          "candidates": int(x.n_valid) * f * f, "seconds": times}


def _arrays(book):
  return book.h_out, book.n_out, book.dst


def settings(quick: bool) -> dict:
  if quick:
    return {"cases": [((24, 24, 3), 5, 0.05), ((48, 48, 4), 3, 0.2)], "repeats": 3}
  cases = [((128, 128, 3), 5, fr) for fr in (0.01, 0.05, 0.2)]
  return {"cases": cases + [((512, 512, 16), 3, 0.01)], "repeats": 15}


def run(cases: Sequence[tuple], repeats: int, json_path: str | None = None) -> dict:
  """Prints the table; returns (and writes as JSON, with the environment) its rows."""
  results = [compare(shape, f, fraction, repeats) for shape, f, fraction in cases]
  rows = []
  for r in results:
    s = r["seconds"]
    search = min(s["submanifold/search_scan_unrolled"], s["submanifold/search_sort"])
    rows.append(("x".join(map(str, r["shape"])), r["f"], f"{r['fraction']:.0%}", r["active"],
                 s["sparse/grid"] * 1e3, s["sparse/sort"] * 1e3,
                 s["sparse/sort"] / s["sparse/grid"], s["submanifold/grid"] * 1e3,
                 search * 1e3, search / s["submanifold/grid"]))
  header = ("shape", "f", "active", "sites", "sparse grid ms", "sparse unique ms",
            "unique / grid", "submanifold grid ms", "submanifold search ms", "search / grid")
  title = "rulebook construction alone (jitted JAX, warm calls)"
  timing.emit(title, header, rows, None)
  payload = {"title": title, "rows": [dict(zip(header, row)) for row in rows]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def main(argv):
  del argv
  run(json_path=flags.FLAGS.json, **settings(flags.FLAGS.quick))


if __name__ == "__main__":
  timing.define_common_flags("sparse_rulebook")
  usage.run(main)
