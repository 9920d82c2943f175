r"""A 4-layer submanifold network against the same network dense, and where its time goes.

Four `submanifold_conv2d` layers (f=3, 16 -> 16 channels, ReLU on the active values and the
ground state) on a 512x512x16 input with 1% of the sites active (uniformly random), one
rulebook built inside the step from ``H`` and reused by all four layers; a training step:
the loss ``sum(M_out**2)``, gradients of the input values and of every kernel and bias.
The dense network is the same four SAME convolutions on the whole 512x512 grid
(`lax.conv_general_dilated` under `jax.jit`, `tf.nn.conv2d` under
`tf.function(jit_compile=True)`), gradients of the input and the weights. Both are
compiled; each figure is the median of interleaved warm calls (the second of two back to
back).

Where the time goes (JAX), each part jitted alone: the rulebook; the four ``Q`` builds
(`submanifold_q` forward); the four ``Q @ W + b`` products; the whole forward; the
backward (forward+backward minus forward); and the floor, a call that only writes four
``Q``-sized arrays and reads four ``dQ``-sized ones.

  python -m crossgrad.benchmarks.sparse_network [--quick] [--json=out/sparse_network.json]
"""

from __future__ import annotations

from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.benchmarks import timing
from crossgrad.cli import usage
from crossgrad.sparse import rulebook

LAYERS = 4


def problem(shape, fraction: float, f: int, seed: int = 0):
  """Active sites (NumPy `SparseData`) and ``LAYERS`` (kernel, bias) pairs."""
  rng = np.random.default_rng(seed)
  dense = np.zeros(shape, np.float32)
  active = rng.random(shape[:2]) < fraction
  dense[active] = rng.standard_normal((int(active.sum()), shape[2])).astype(np.float32)
  n = shape[2]
  params = [(rng.standard_normal((f, f, n, n)).astype(np.float32) * np.float32(0.2),
             rng.standard_normal(n).astype(np.float32) * np.float32(0.1))
            for _ in range(LAYERS)]
  return cg.SparseData.from_dense(dense), params


def jax_steps(x: cg.SparseData, params, f: int) -> dict:
  """Zero-argument callables (blocking) for the JAX sparse and dense steps and the parts."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  xp = cg.jax.xp
  params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]

  def sparse_forward(params, m, gs, h):
    s = cg.SparseData.unflatten(x.dense_shape, (h, m, gs, x.n_valid))
    book = cg.sparse.submanifold_rulebook(s, f)
    for w, b in params:
      s = cg.jax.submanifold_conv2d(s, w, b, rulebook=book).map(jax.nn.relu)
    return jnp.sum(s.M * s.M)

  def dense_forward(params, d):
    for w, b in params:
      d = jax.nn.relu(jax.lax.conv_general_dilated(
          d[None], w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))[0] + b)
    return jnp.sum(d * d)

  h, m, gs = (jnp.asarray(v) for v in (x.H, x.M, x.ground_state))
  d = jnp.asarray(x.to_dense())
  sparse_step = jax.jit(jax.grad(sparse_forward, argnums=(0, 1)))
  dense_step = jax.jit(jax.grad(dense_forward, argnums=(0, 1)))
  forward = jax.jit(sparse_forward)
  build = jax.jit(lambda h: rulebook.build_submanifold(xp, h, x.n_valid, x.dense_shape, f).dst)
  src = build(h)
  op = cg.jax.get("submanifold_q")
  ms = [m * (k + 1) for k in range(LAYERS)]  # Distinct inputs: nothing to share.
  q_builds = jax.jit(lambda ms, gs, src: [op(m, gs, src) for m in ms])
  qs = q_builds(ms, gs, src)
  products = jax.jit(lambda qs, params: [q @ w.reshape(q.shape[1], -1) + b
                                         for q, (w, b) in zip(qs, params)])
  # The floor: write the four Q-sized arrays and read four dQ-sized ones, nothing else.
  floor = jax.jit(lambda v, dqs: ([jnp.broadcast_to(v, qs[0].shape) + k for k in range(LAYERS)],
                                  [jnp.sum(dq) for dq in dqs]))
  v, dqs = jnp.ones(qs[0].shape[1], jnp.float32), [jnp.ones_like(q) + k for k, q in enumerate(qs)]
  block = jax.block_until_ready
  return {"sparse": lambda: block(sparse_step(params, m, gs, h)),
          "dense": lambda: block(dense_step(params, d)),
          "parts": {"rulebook": lambda: block(build(h)),
                    "Q": lambda: block(q_builds(ms, gs, src)),
                    "matmul": lambda: block(products(qs, params)),
                    "forward": lambda: block(forward(params, m, gs, h)),
                    "floor": lambda: block(floor(v, dqs))}}


def tf_steps(x: cg.SparseData, params, f: int) -> dict:
  """Zero-argument callables for the TensorFlow sparse and dense steps (XLA)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  variables = [tf.constant(v) for pair in params for v in pair]

  @tf.function(jit_compile=True, autograph=False)
  def sparse_step(m, gs, h, *variables):
    with tf.GradientTape() as tape:
      tape.watch([m, *variables])
      s = cg.SparseData.unflatten(x.dense_shape, (h, m, gs, x.n_valid))
      book = cg.sparse.submanifold_rulebook(s, f)
      for w, b in zip(variables[::2], variables[1::2]):
        s = cg.tensorflow.submanifold_conv2d(s, w, b, rulebook=book).map(tf.nn.relu)
      loss = tf.reduce_sum(s.M * s.M)
    return tape.gradient(loss, [m, *variables])

  @tf.function(jit_compile=True, autograph=False)
  def dense_step(d, *variables):
    with tf.GradientTape() as tape:
      tape.watch([d, *variables])
      y = d[None]
      for w, b in zip(variables[::2], variables[1::2]):
        y = tf.nn.relu(tf.nn.conv2d(y, w, 1, "SAME") + b)
      loss = tf.reduce_sum(y * y)
    return tape.gradient(loss, [d, *variables])

  h, m, gs = (tf.constant(v) for v in (x.H, x.M, x.ground_state))
  d = tf.constant(x.to_dense())
  return {"sparse": lambda: [t.numpy() for t in sparse_step(m, gs, h, *variables)],
          "dense": lambda: [t.numpy() for t in dense_step(d, *variables)]}


def check_gradients(x: cg.SparseData, params, f: int):
  """The JAX sparse step's first kernel gradient equals TF's (one network, two frameworks)."""
  got_jax = np.asarray(jax_steps(x, params, f)["sparse"]()[0][0][0])
  got_tf = np.asarray(tf_steps(x, params, f)["sparse"]()[1])
  scale = np.abs(got_jax).max()
  if not np.allclose(got_jax, got_tf, rtol=1e-3, atol=1e-4 * scale):
    raise AssertionError("JAX and TF sparse networks give different kernel gradients")


def measure(shape, fraction: float, f: int, repeats: int) -> dict:
  x, params = problem(shape, fraction, f)
  check_gradients(x, params, f)
  jax_fns, tf_fns = jax_steps(x, params, f), tf_steps(x, params, f)
  steps = {"jax_sparse": jax_fns["sparse"], "jax_dense": jax_fns["dense"],
           "tf_sparse": tf_fns["sparse"], "tf_dense": tf_fns["dense"]}
  times = timing.interleaved_medians(steps, repeats, warmup=1, warm=1)
  parts = timing.interleaved_medians({**jax_fns["parts"], "step": jax_fns["sparse"]},
                                     max(5 * repeats, 15), warmup=2, warm=1)
  return {"shape": list(shape), "fraction": fraction, "f": f, "layers": LAYERS,
          "active": int(x.n_valid), "seconds": times, "parts_seconds": parts,
          "speedup": {k: times[f"{k}_dense"] / times[f"{k}_sparse"] for k in ("jax", "tf")}}


def settings(quick: bool) -> dict:
  if quick:
    return {"shape": (64, 64, 4), "fraction": 0.05, "f": 3, "repeats": 2}
  return {"shape": (512, 512, 16), "fraction": 0.01, "f": 3, "repeats": 7}


def run(shape, fraction: float, f: int, repeats: int, json_path: str | None = None) -> dict:
  """Prints both tables; returns (and writes as JSON, with the environment) their rows."""
  result = measure(shape, fraction, f, repeats)
  s = result["seconds"]
  rows = [(name, s[f"{key}_sparse"] * 1e3, s[f"{key}_dense"] * 1e3, result["speedup"][key])
          for key, name in (("jax", "JAX (lax.conv_general_dilated)"),
                            ("tf", "TF (tf.nn.conv2d, XLA)"))]
  header = ("framework", "sparse ms", "dense ms", "dense / sparse")
  title = (f"{LAYERS}-layer submanifold network, {'x'.join(map(str, shape))}, f={f}, "
           f"{fraction:.0%} active ({result['active']} sites), forward+backward vs dense")
  timing.emit(title, header, rows, None)
  p = result["parts_seconds"]
  parts = {"rulebook": p["rulebook"], f"Q ({LAYERS} submanifold_q)": p["Q"],
           f"matmul ({LAYERS} Q @ W + b)": p["matmul"],
           "rest of forward (ReLU, masks, loss)": p["forward"] - p["rulebook"] - p["Q"]
           - p["matmul"], "backward (step - forward)": p["step"] - p["forward"],
           "forward+backward step": p["step"],
           f"floor (write {LAYERS} Q, read {LAYERS} dQ)": p["floor"]}
  part_header = ("part", "ms", "share of step")
  part_rows = [(name, t * 1e3, t / p["step"]) for name, t in parts.items()]
  timing.emit("where the sparse step's time goes (JAX, each part jitted alone)", part_header,
              part_rows, None)
  payload = {"title": title, "active": result["active"], "layers": LAYERS,
             "rows": [dict(zip(header, row)) for row in rows],
             "parts": [dict(zip(part_header, row)) for row in part_rows]}
  if json_path:
    timing.write_json(json_path, payload)
  return payload


def main(argv):
  del argv
  run(json_path=flags.FLAGS.json, **settings(flags.FLAGS.quick))


if __name__ == "__main__":
  timing.define_common_flags("sparse_network")
  usage.run(main)
