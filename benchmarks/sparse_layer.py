"""One sparse layer with a reused rulebook, against the floor (part of `sparse_conv`).

For `sparse_conv2d` (VALID) and `submanifold_conv2d` (SAME) at 128x128x3, f=5, the
rulebook is built beforehand (as a network reusing it would) and each step is compiled
(`jax.jit`, `tf.function(jit_compile=True)`):

* ``op`` forward: ``Q`` from ``M`` (`sparse_q` / `submanifold_q`); backward: ``dM`` and
  ``d ground_state`` from ``dQ``;
* ``layer`` forward: ``Q @ W + b`` at the sites; step: the forward and the backward
  (``dM``, ``d ground_state``, ``dW``, ``db`` from ``dY``) in one call, as a training step
  runs them; backward: step less forward (its floor: the two floors' sum for the step).
  An op's backward call needs no ``Q``, which the compiler drops.

The floor, per layer kind and framework: a compiled call that only writes a ``Q``-sized
array (forward) or only reads ``dQ`` once (backward), the least any design that
materialises ``Q`` does, dispatch included. Ratios are ``time / floor``.
"""

from __future__ import annotations

import numpy as np

import crossgrad as cg
from crossgrad.benchmarks import timing
from crossgrad.benchmarks.sparse_rulebook import sites

KINDS = ("sparse", "submanifold")
OPS = {"sparse": "sparse_q", "submanifold": "submanifold_q"}
PARTS = ("op_forward", "op_backward", "layer_forward", "layer_backward", "layer_step")


def _book(kind, x, f):
  if kind == "sparse":
    return cg.sparse.conv_rulebook(x, f)
  return cg.sparse.submanifold_rulebook(x, f)


def _layer(module, kind, x, w, b, f, book):
  if kind == "sparse":
    return module.sparse_conv2d(x, w, b, f, rulebook=book)
  return module.submanifold_conv2d(x, w, b, rulebook=book)


def _q_inputs(kind, x, book):
  if kind == "sparse":
    return x.M, x.ground_state, book.h_out, book.dst
  return x.M, x.ground_state, book.dst


def _jax_steps(kind, dense, weights, f):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  x = cg.SparseData.from_dense(jnp.asarray(dense))
  book = _book(kind, x, f)
  w, b = (jnp.asarray(v) for v in weights)
  op = cg.jax.get(OPS[kind])
  inputs = _q_inputs(kind, x, book)
  q_forward = jax.jit(lambda *a: op(*a))
  q = q_forward(*inputs)
  q_backward = jax.jit(lambda m, gs, rest, dq: jax.vjp(lambda m, gs: op(m, gs, *rest), m, gs)[1](
      dq))

  def layer(m, gs, w, b, book):
    return _layer(cg.jax, kind, cg.SparseData.unflatten(x.dense_shape, (x.H, m, gs, x.n_valid)),
                  w, b, f, book).M

  layer_forward = jax.jit(layer)
  y = layer_forward(x.M, x.ground_state, w, b, book)
  layer_step = jax.jit(lambda m, gs, w, b, book, dy: jax.vjp(
      lambda *p: layer(*p, book), m, gs, w, b)[1](dy))
  dq, dy = jnp.ones_like(q), jnp.ones_like(y)
  block = jax.block_until_ready
  return y, q.shape, {
      "op_forward": lambda: block(q_forward(*inputs)),
      "op_backward": lambda: block(q_backward(x.M, x.ground_state, inputs[2:], dq)),
      "layer_forward": lambda: block(layer_forward(x.M, x.ground_state, w, b, book)),
      "layer_step": lambda: block(layer_step(x.M, x.ground_state, w, b, book, dy))}


def _tf_steps(kind, dense, weights, f):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = cg.SparseData.from_dense(tf.constant(dense))
  book = _book(kind, x, f)
  w, b = (tf.constant(v) for v in weights)
  op = cg.tensorflow.get(OPS[kind])
  inputs = _q_inputs(kind, x, book)
  compiled = lambda fn: tf.function(fn, jit_compile=True, autograph=False)
  q_forward = compiled(lambda *a: op(*a))

  @compiled
  def q_backward(m, gs, rest, dq):
    with tf.GradientTape() as tape:
      tape.watch([m, gs])
      q = op(m, gs, *rest)
    return tape.gradient(q, [m, gs], output_gradients=dq)

  def layer(m, gs, w, b, book):
    return _layer(cg.tensorflow, kind, cg.SparseData.unflatten(
        x.dense_shape, (x.H, m, gs, x.n_valid)), w, b, f, book).M

  layer_forward = compiled(layer)

  @compiled
  def layer_step(m, gs, w, b, book, dy):
    with tf.GradientTape() as tape:
      tape.watch([m, gs, w, b])
      y = layer(m, gs, w, b, book)
    return tape.gradient(y, [m, gs, w, b], output_gradients=dy)

  q = q_forward(*inputs)
  y = layer_forward(x.M, x.ground_state, w, b, book)
  dq, dy = tf.ones_like(q), tf.ones_like(y)
  run = lambda fn, *a: [t.numpy() for t in tf.nest.flatten(fn(*a))]
  return y.numpy(), tuple(q.shape), {
      "op_forward": lambda: run(q_forward, *inputs),
      "op_backward": lambda: run(q_backward, x.M, x.ground_state, inputs[2:], dq),
      "layer_forward": lambda: run(layer_forward, x.M, x.ground_state, w, b, book),
      "layer_step": lambda: run(layer_step, x.M, x.ground_state, w, b, book, dy)}


def _floor_steps(framework, q_shape):
  """Write a Q-sized array / read dQ once, compiled, in ``framework``."""
  v, dq = np.ones(q_shape[1], np.float32), np.ones(q_shape, np.float32)
  if framework == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
    write_q = jax.jit(lambda v: jnp.broadcast_to(v, q_shape) + 0)
    read_dq = jax.jit(jnp.sum)
    v, dq = jax.device_put(v), jax.device_put(dq)
    return {"floor_forward": lambda: jax.block_until_ready(write_q(v)),
            "floor_backward": lambda: jax.block_until_ready(read_dq(dq))}
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  write_q = tf.function(lambda v: tf.broadcast_to(v, q_shape) + 0, jit_compile=True,
                        autograph=False)
  read_dq = tf.function(tf.reduce_sum, jit_compile=True, autograph=False)
  v, dq = tf.constant(v), tf.constant(dq)
  return {"floor_forward": lambda: write_q(v).numpy(),
          "floor_backward": lambda: read_dq(dq).numpy()}


def compare_reuse(shape, f: int, n_out: int, fraction: float, repeats: int, seed: int = 0):
  """Op and layer with a reused rulebook vs the floor, per kind and framework."""
  rng = np.random.default_rng(seed)
  x = sites(rng, shape, fraction)
  dense = np.asarray(x.to_dense())
  weights = (rng.standard_normal((f, f, shape[2], n_out)).astype(np.float32) * np.float32(0.1),
             rng.standard_normal(n_out).astype(np.float32))
  fns, result = {}, {"shape": list(shape), "f": f, "n_out": n_out, "fraction": fraction,
                     "active": int(x.n_valid), "rows": {}}
  for kind in KINDS:
    want = _layer(cg.numpy, kind, x, *weights, f, _book(kind, x, f)).M
    for framework, steps in (("jax", _jax_steps), ("tensorflow", _tf_steps)):
      y, q_shape, named = steps(kind, dense, weights, f)
      if not np.allclose(np.asarray(y), want, rtol=1e-4, atol=1e-4):
        raise AssertionError(f"{framework} {kind} layer differs from NumPy's")
      fns.update({f"{kind}/{framework}/{k}": v for k, v in named.items()})
      fns.update({f"{kind}/{framework}/{k}": v
                  for k, v in _floor_steps(framework, q_shape).items()})
    result["rows"][kind] = int(q_shape[0])
  times = timing.interleaved_medians(fns, repeats, warmup=2, warm=2)
  result["seconds"] = times
  for kind in KINDS:  # The layer's backward: its VJP call less its forward.
    for framework in ("jax", "tensorflow"):
      name = f"{kind}/{framework}/layer_"
      times[name + "backward"] = times[name + "step"] - times[name + "forward"]
      times[f"{kind}/{framework}/floor_step"] = sum(
          times[f"{kind}/{framework}/floor_{part}"] for part in ("forward", "backward"))
  result["vs_floor"] = {
      name: t / times[f"{name.rsplit('/', 1)[0]}/floor_{name.rsplit('_', 1)[1]}"]
      for name, t in times.items() if "floor" not in name}
  return result


def table(results) -> tuple[tuple[str, ...], list[tuple]]:
  """Rows (kind, framework, part, active, ms, floor ms, x floor) for `timing.emit`."""
  rows = []
  for r in results:
    s = r["seconds"]
    for kind in KINDS:
      for framework in ("jax", "tensorflow"):
        for part in PARTS:
          name = f"{kind}/{framework}/{part}"
          floor = s[f"{kind}/{framework}/floor_{part.rsplit('_', 1)[1]}"]
          rows.append((kind, framework, part.replace("_", " "), f"{r['fraction']:.0%}",
                       s[name] * 1e3, floor * 1e3, r["vs_floor"][name]))
  return ("layer", "framework", "part", "active", "ms", "floor ms", "x floor"), rows
