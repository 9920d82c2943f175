"""Sparse convolution (sparse_cnn) against sparse_cnn's loops and against dense convolution.

1. Q build (forward: rulebook + scatter) and Q gradient (backward: gather) of the
   vectorised `sparse_q` (compiled in JAX and TF; also the same code in NumPy) against
   sparse_cnn's Python loops (`crossgrad.benchmarks.sparse_loops`) at 128x128x3, f=5;
   "floor" bounds any compiled design on this machine: a jitted JAX call that only
   writes a Q-sized array (forward) or only reads dQ once (backward).
2. One layer, forward + backward (gradients of M, ground_state, W, b), of
   `sparse_conv2d` against the framework's dense convolution (`tf.nn.conv2d`,
   `lax.conv_general_dilated`; gradients of the input, W, b) at 512x512x16, f=3,
   n_out=16, for several active fractions (uniformly random sites: the worst case for
   dilation); the break-even fraction is interpolated in log-log.
3. One layer (`sparse_conv2d` and `submanifold_conv2d`, n_out=16) with the rulebook
   built beforehand and reused, forward and backward, against the floor at 128x128x3,
   f=5 (`crossgrad.benchmarks.sparse_layer`).

Everything framework-side runs compiled (`jax.jit`, `tf.function(jit_compile=True)`),
in sections 1 and 2 including the rulebook built from H inside the step. Variants of one comparison run
interleaved; each figure is the median over ``--repeats`` rounds of a warm call: the
third of three back-to-back calls, as in a training loop. (On a shared VM a compiled
call that follows idle time or other work runs slower, on cold caches; sparse_cnn's loops,
far slower a call, hardly notice.)

  python -m crossgrad.benchmarks.sparse_conv [--quick] [--json=out/sparse_conv.json]
"""

from __future__ import annotations

from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.benchmarks import sparse_layer
from crossgrad.benchmarks import sparse_loops
from crossgrad.benchmarks import timing
from crossgrad.cli import usage
from crossgrad.sparse import rulebook


def _sites(rng, shape, fraction):
  dense = np.zeros(shape, np.float32)
  active = rng.random(shape[:2]) < fraction
  dense[active] = rng.standard_normal((int(active.sum()), shape[2])).astype(np.float32)
  return cg.SparseData.from_dense(dense)


def _median_times(fns: dict, repeats: int) -> dict:
  """Median seconds of a warm call per variant: variants interleaved, and each sample
  the third of three back-to-back calls (see the module docstring)."""
  return timing.interleaved_medians(fns, repeats, warmup=2, warm=2)


# Framework steps. Each returns a zero-argument callable that blocks on its result.

def _numpy_q_steps(x, f, capacity):
  """The same vectorised code run by NumPy (no compilation, no dispatch overhead)."""
  xp, op = cg.numpy.xp, cg.get("sparse_q")

  def forward():
    book = rulebook.build(xp, x.H, x.n_valid, x.dense_shape, f, capacity)
    return book.h_out, op.forward(xp, x.M, x.ground_state, book.h_out, book.dst)[0]

  book = rulebook.build(xp, x.H, x.n_valid, x.dense_shape, f, capacity)
  residuals = op.forward(xp, x.M, x.ground_state, book.h_out, book.dst)[1]
  dq = np.ones((capacity, f * f * x.dense_shape[2]), np.float32)
  return forward, lambda: op.backward(xp, residuals, dq)


def _jax_q_steps(x, f, capacity):
  import jax  # pylint: disable=g-import-not-at-top
  op = cg.jax.get("sparse_q")

  @jax.jit
  def forward(h, m, gs):
    book = rulebook.build(cg.jax.xp, h, x.n_valid, x.dense_shape, f, capacity)
    return book.h_out, op(m, gs, book.h_out, book.dst)

  @jax.jit
  def backward(m, gs, h_out, dst, dq):
    return jax.vjp(lambda m, gs: op(m, gs, h_out, dst), m, gs)[1](dq)

  h, m, gs = (jax.device_put(v) for v in (x.H, x.M, x.ground_state))
  book = rulebook.build(cg.numpy.xp, x.H, x.n_valid, x.dense_shape, f, capacity)
  h_out, dst = jax.device_put(book.h_out), jax.device_put(book.dst)
  dq = jax.device_put(np.ones((capacity, f * f * x.dense_shape[2]), np.float32))
  return (lambda: jax.block_until_ready(forward(h, m, gs)),
          lambda: jax.block_until_ready(backward(m, gs, h_out, dst, dq)))


def _tf_q_steps(x, f, capacity):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  op = cg.tensorflow.get("sparse_q")

  @tf.function(jit_compile=True, autograph=False)
  def forward(h, m, gs):
    book = rulebook.build(cg.tensorflow.xp, h, x.n_valid, x.dense_shape, f, capacity)
    return book.h_out, op(m, gs, book.h_out, book.dst)

  @tf.function(jit_compile=True, autograph=False)
  def backward(m, gs, h_out, dst, dq):
    with tf.GradientTape() as tape:
      tape.watch([m, gs])
      q = op(m, gs, h_out, dst)
    return tape.gradient(q, [m, gs], output_gradients=dq)

  h, m, gs = (tf.constant(v) for v in (x.H, x.M, x.ground_state))
  book = rulebook.build(cg.numpy.xp, x.H, x.n_valid, x.dense_shape, f, capacity)
  h_out, dst = tf.constant(book.h_out), tf.constant(book.dst)
  dq = tf.ones((capacity, f * f * x.dense_shape[2]), tf.float32)
  return (lambda: [t.numpy() for t in forward(h, m, gs)],
          lambda: [t.numpy() for t in backward(m, gs, h_out, dst, dq)])


def _jax_floor_steps(x, f, capacity):
  """What any compiled design costs at least: writing Q, and reading dQ.

  Forward: a jitted JAX call whose only work is to return a Q-sized array of the
  ground state (no rulebook, no active values). Backward: one that only sums dQ (every
  gradient design reads it once). ``loops / floor`` bounds what compiled code reaches here.
  """
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  kk, n_in = f * f, x.dense_shape[2]
  write_q = jax.jit(lambda gs: jnp.broadcast_to(jnp.tile(gs, kk), (capacity, kk * n_in)) + 0)
  read_dq = jax.jit(jnp.sum)
  gs = jax.device_put(x.ground_state)
  dq = jax.device_put(np.ones((capacity, kk * n_in), np.float32))
  return (lambda: jax.block_until_ready(write_q(gs)),
          lambda: jax.block_until_ready(read_dq(dq)))


def compare_loops(shape, f, fraction, repeats, seed=0) -> dict:
  """Seed loops vs compiled sparse_q (forward with the rulebook; backward)."""
  x = _sites(np.random.default_rng(seed), shape, fraction)
  h, m, gs = np.asarray(x.H), np.asarray(x.M), np.asarray(x.ground_state)
  want_h, want_q = sparse_loops.build_q(h, m, shape, f, gs)
  capacity = len(want_h)
  dq = np.ones_like(want_q)
  fns = {"loops_forward": lambda: sparse_loops.build_q(h, m, shape, f, gs),
         "loops_backward": lambda: sparse_loops.grad_q(dq, h, m, shape, f)}
  for name, steps in (("numpy", _numpy_q_steps), ("jax", _jax_q_steps),
                      ("tensorflow", _tf_q_steps), ("floor", _jax_floor_steps)):
    fns[f"{name}_forward"], fns[f"{name}_backward"] = steps(x, f, capacity)
  want_dm, want_dt = sparse_loops.grad_q(dq, h, m, shape, f)
  for name in ("numpy", "jax", "tensorflow"):  # Same H_out, Q and gradients as the loops.
    h_out, q = fns[f"{name}_forward"]()
    if not (np.array_equal(np.asarray(h_out), want_h) and np.array_equal(np.asarray(q), want_q)):
      raise AssertionError(f"{name}: H_out or Q differs from sparse_cnn's loops")
    dm, dt = (np.asarray(v) for v in fns[f"{name}_backward"]()[:2])
    if not (np.allclose(dm, want_dm) and np.allclose(dt, want_dt, rtol=1e-4)):
      raise AssertionError(f"{name}: dM or d ground_state differs from sparse_cnn's loops")
  loop_repeats = max(3, repeats // 3)  # The loops are the slow part of the run.
  times = _median_times({k: v for k, v in fns.items() if k.startswith("loops")},
                        loop_repeats)
  times.update(_median_times({k: v for k, v in fns.items() if not k.startswith("loops")},
                             repeats))
  result = {"shape": list(shape), "f": f, "fraction": fraction, "active": int(x.n_valid),
            "output_sites": capacity, "seconds": times, "speedup": {}}
  for name in ("numpy", "jax", "tensorflow"):
    for part in ("forward", "backward"):
      result["speedup"][f"{name}_{part}"] = times[f"loops_{part}"] / times[f"{name}_{part}"]
  result["floor_speedup"] = {part: times[f"loops_{part}"] / times[f"floor_{part}"]
                             for part in ("forward", "backward")}
  return result


def _jax_layer_steps(x, weights, f, capacity, dense):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  w, b = (jnp.asarray(v) for v in weights)

  def sparse_loss(m, gs, w, b, h):
    s = cg.SparseData.unflatten(x.dense_shape, (h, m, gs, x.n_valid))
    y = cg.jax.sparse_conv2d(s, w, b, f, capacity=capacity)
    return jnp.sum(y.M * y.M) + jnp.sum(y.ground_state)

  def dense_loss(d, w, b):
    y = jax.lax.conv_general_dilated(d[None], w, (1, 1), "VALID",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))[0] + b
    return jnp.sum(y * y)

  sparse = jax.jit(jax.grad(sparse_loss, argnums=(0, 1, 2, 3)))
  dense_step = jax.jit(jax.grad(dense_loss, argnums=(0, 1, 2)))
  args = [jnp.asarray(v) for v in (x.M, x.ground_state)] + [w, b, jnp.asarray(x.H)]
  d = jnp.asarray(dense)
  return (lambda: jax.block_until_ready(sparse(*args)),
          lambda: jax.block_until_ready(dense_step(d, w, b)))


def _tf_layer_steps(x, weights, f, capacity, dense):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  w, b = (tf.constant(v) for v in weights)

  @tf.function(jit_compile=True, autograph=False)
  def sparse(m, gs, w, b, h):
    with tf.GradientTape() as tape:
      tape.watch([m, gs, w, b])
      s = cg.SparseData.unflatten(x.dense_shape, (h, m, gs, x.n_valid))
      y = cg.tensorflow.sparse_conv2d(s, w, b, f, capacity=capacity)
      loss = tf.reduce_sum(y.M * y.M) + tf.reduce_sum(y.ground_state)
    return tape.gradient(loss, [m, gs, w, b])

  @tf.function(jit_compile=True, autograph=False)
  def dense_step(d, w, b):
    with tf.GradientTape() as tape:
      tape.watch([d, w, b])
      y = tf.nn.conv2d(d[None], w, 1, "VALID")[0] + b
      loss = tf.reduce_sum(y * y)
    return tape.gradient(loss, [d, w, b])

  args = [tf.constant(v) for v in (x.M, x.ground_state)] + [w, b, tf.constant(x.H)]
  d = tf.constant(dense)
  return (lambda: [t.numpy() for t in sparse(*args)],
          lambda: [t.numpy() for t in dense_step(d, w, b)])


def compare_dense(shape, f, n_out, fractions, repeats, seed=0) -> list[dict]:
  """Sparse layer vs dense convolution, forward + backward, per active fraction."""
  rng = np.random.default_rng(seed)
  weights = (rng.standard_normal((f, f, shape[2], n_out)).astype(np.float32) * 0.1,
             rng.standard_normal(n_out).astype(np.float32))
  results = []
  for fraction in fractions:
    x = _sites(rng, shape, fraction)
    book = rulebook.build(cg.numpy.xp, x.H, x.n_valid, x.dense_shape, f,
                          rulebook.safe_capacity(x.capacity, x.dense_shape, f))
    capacity = int(book.n_out)
    dense = x.to_dense()
    fns = {}
    for name, steps in (("jax", _jax_layer_steps), ("tensorflow", _tf_layer_steps)):
      fns[f"{name}_sparse"], fns[f"{name}_dense"] = steps(x, weights, f, capacity, dense)
    times = _median_times(fns, repeats)
    results.append({
        "shape": list(shape), "f": f, "n_out": n_out, "fraction": fraction,
        "active": int(x.n_valid), "output_sites": capacity, "seconds": times,
        "speedup": {name: times[f"{name}_dense"] / times[f"{name}_sparse"]
                    for name in ("jax", "tensorflow")}})
  return results


def break_even(results: list[dict], name: str) -> str:
  """Active fraction where sparse and dense take equally long (log-log interpolation)."""
  points = [(r["fraction"], r["speedup"][name]) for r in results]
  for (f0, s0), (f1, s1) in zip(points, points[1:]):
    if s0 >= 1.0 >= s1:
      t = np.log(s0) / (np.log(s0) - np.log(s1)) if s0 != s1 else 0.0
      return f"{np.exp(np.log(f0) + t * (np.log(f1) - np.log(f0))):.1%}"
  if all(s >= 1.0 for _, s in points):
    return f"> {points[-1][0]:.0%}"
  return f"< {points[0][0]:.0%}"


def settings(quick: bool) -> dict:
  return {"quick": quick, "repeats": 3 if quick else 9,
          "fractions": (0.05, 0.2) if quick else (0.01, 0.05, 0.2)}


def run(quick: bool = False, repeats: int = 9, fractions=(0.01, 0.05, 0.2), n_out: int = 16,
        json_path: str | None = None) -> dict:
  """Every section at the sizes it reports (``quick``: tiny ones); prints the tables and
  returns (and writes as JSON, with the environment) one flat table per section."""
  if quick:
    loop_shape, dense_shape, reps = (24, 24, 3), (48, 48, 4), 3
  else:
    loop_shape, dense_shape, reps = (128, 128, 3), (512, 512, 16), repeats
  # Quick: the loop and reuse sections at the largest fraction only; the dense section
  # keeps every fraction, between which its break-even is interpolated.
  section_fractions = fractions[-1:] if quick else fractions
  loops = [compare_loops(loop_shape, 5, fraction, reps) for fraction in section_fractions]
  reuse = [sparse_layer.compare_reuse(loop_shape, 5, n_out, fraction, reps)
           for fraction in section_fractions]
  dense = compare_dense(dense_shape, 3, dense_shape[2], fractions, reps)
  sections = {
      "loops": (f"sparse_q vs sparse_cnn loops: {loop_shape}, f=5", *_loop_table(loops)),
      "dense": (f"sparse_conv2d vs dense conv, forward+backward: {dense_shape}, f=3, "
                f"n_out={dense_shape[2]}", *_dense_table(dense)),
      "rows": (f"one layer, rulebook built beforehand, vs the floor: {loop_shape}, f=5, "
               f"n_out={n_out}", *sparse_layer.table(reuse))}
  payload = {"title": "sparse convolution: seed loops, dense convolution, reused rulebooks",
             "break_even": {name: break_even(dense, name) for name in ("jax", "tensorflow")}}
  for key, (title, header, rows) in sections.items():
    timing.emit("\n" + title, header, rows, None)
    payload[key] = [dict(zip(header, row)) for row in rows]
  print("break-even active fraction: " + ", ".join(
      f"{k} {v}" for k, v in payload["break_even"].items()))
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def main(argv):
  del argv
  run(flags.FLAGS.quick, flags.FLAGS.repeats, [float(v) for v in flags.FLAGS.fractions],
      flags.FLAGS.n_out, flags.FLAGS.json)


def _loop_table(loops):
  header = ("active", "sites", "out sites", "variant", "forward ms", "forward x loops",
            "backward ms", "backward x loops")
  rows = []
  for r in loops:
    speedup = dict(r["speedup"], **{f"floor_{p}": v for p, v in r["floor_speedup"].items()})
    for name in ("loops", "numpy", "jax", "tensorflow", "floor"):
      ratios = [None if name == "loops" else speedup[f"{name}_{part}"]
                for part in ("forward", "backward")]
      rows.append((f"{r['fraction']:.0%}", r["active"], r["output_sites"], name,
                   r["seconds"][f"{name}_forward"] * 1e3, ratios[0],
                   r["seconds"][f"{name}_backward"] * 1e3, ratios[1]))
  return header, rows


def _dense_table(dense):
  header = ("active", "out sites", "framework", "sparse ms", "dense ms", "dense / sparse")
  rows = [(f"{r['fraction']:.0%}", r["output_sites"], name, r["seconds"][f"{name}_sparse"] * 1e3,
           r["seconds"][f"{name}_dense"] * 1e3, r["speedup"][name])
          for r in dense for name in ("jax", "tensorflow")]
  return header, rows


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("sparse_conv")
  flags.DEFINE_integer("repeats", 9, "Interleaved rounds per comparison.")
  flags.DEFINE_integer("n_out", 16, "Output channels of the reused-rulebook layer.")
  flags.DEFINE_list("fractions", ["0.01", "0.05", "0.2"], "Active fractions to measure.")


if __name__ == "__main__":
  define_flags()
  usage.run(main)
