"""`bernoulli_mask` against the hand-written mask with a `stop_gradient` surrogate.

A jitted train step (``tf.function(jit_compile=True)`` / `jax.jit`) on an attention
map ``(N, H, W, 1)`` and features ``(N, H, W, C)`` of 2**20 elements: ``p =
sigmoid(logits)``, the mask, ``loss = sum(out * w)``, gradients, an SGD update.
Baseline: ``features * (p + stop_gradient(cast(u < p) - p))``, the usual hand-written
form (its forward is ``features * m`` only up to rounding). Two settings per framework:
``given_u`` feeds both the same noise tensor (the op's own cost); ``sampled`` draws
the noise inside the step (``bernoulli_mask_sampled`` against the framework's own
uniform generator); TF adds ``threefry``, the sampled op with the portable generator
(JAX's ``sampled`` is Threefry already). Runs are interleaved; each figure is a median
over repeats.

  python -m crossgrad.benchmarks.bernoulli_mask [--smoke] [--json=out/bernoulli_mask.json]
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from typing import Callable

from absl import flags
import numpy as np

from crossgrad.cli import usage

FLAGS = flags.FLAGS

LR = 1e-3
REPEATS, ITERS = 30, 5


def _shapes(smoke: bool):
  n, h, w, c = (2, 8, 8, 4) if smoke else (16, 64, 64, 16)
  return (n, h, w, 1), (n, h, w, c)


def _initial(p_shape, f_shape):
  rng = np.random.default_rng(0)
  return (rng.standard_normal(p_shape).astype(np.float32),
          rng.standard_normal(f_shape).astype(np.float32),
          rng.standard_normal(f_shape).astype(np.float32),
          rng.uniform(size=p_shape).astype(np.float32))


def tensorflow_steps(p_shape, f_shape) -> dict[str, Callable[[], None]]:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top

  logits0, features0, w0, u0 = _initial(p_shape, f_shape)
  op = cg.tensorflow.get("bernoulli_mask")

  def handwritten(p, features, u):
    m = tf.cast(u < p, features.dtype)
    return features * (p + tf.stop_gradient(m - p))

  def make(mask: Callable, noise: Callable):
    logits, features = tf.Variable(logits0), tf.Variable(features0)
    w, counter = tf.constant(w0), tf.Variable(0, dtype=tf.int64)

    @tf.function(jit_compile=True)
    def step():
      u = noise(counter)
      counter.assign_add(1)
      with tf.GradientTape() as tape:
        loss = tf.reduce_sum(mask(tf.sigmoid(logits), features, u) * w)
      g_logits, g_features = tape.gradient(loss, [logits, features])
      logits.assign_sub(LR * g_logits)
      features.assign_sub(LR * g_features)
      return loss

    return lambda: step().numpy()

  given = tf.constant(u0)
  seed = lambda c: tf.stack([tf.constant(0, tf.int64), c])
  return {
      "given_u/op": make(op, lambda c: given),
      "given_u/handwritten": make(handwritten, lambda c: given),
      "sampled/op": make(cg.tensorflow.bernoulli_mask_sampled, seed),
      "sampled/handwritten": make(handwritten, lambda c: tf.random.stateless_uniform(
          p_shape, seed(c))),
      "threefry/op": make(lambda p, f, s: cg.tensorflow.bernoulli_mask_sampled(
          p, f, s, "threefry"), seed),
      "threefry/handwritten": make(handwritten, lambda c: tf.random.stateless_uniform(
          p_shape, seed(c))),
  }


def jax_steps(p_shape, f_shape) -> dict[str, Callable[[], None]]:
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top

  logits0, features0, w0, u0 = _initial(p_shape, f_shape)
  op = cg.jax.get("bernoulli_mask")

  def handwritten(p, features, u):
    m = (u < p).astype(features.dtype)
    return features * (p + jax.lax.stop_gradient(m - p))

  def make(mask: Callable, noise: Callable):
    w = jnp.asarray(w0)

    @jax.jit
    def step(params, count):
      def loss_fn(params):
        logits, features = params
        return jnp.sum(mask(jax.nn.sigmoid(logits), features, noise(count)) * w)
      loss, grads = jax.value_and_grad(loss_fn)(params)
      return jax.tree.map(lambda a, g: a - LR * g, params, grads), loss

    state = {"params": (jnp.asarray(logits0), jnp.asarray(features0)), "count": 0}

    def run():
      state["params"], loss = step(state["params"], state["count"])
      state["count"] += 1
      loss.block_until_ready()
    return run

  given = jnp.asarray(u0)
  key = lambda c: jax.random.fold_in(jax.random.key(0), c)
  return {
      "given_u/op": make(op, lambda c: given),
      "given_u/handwritten": make(handwritten, lambda c: given),
      "sampled/op": make(cg.jax.bernoulli_mask_sampled, key),
      "sampled/handwritten": make(handwritten, lambda c: jax.random.uniform(key(c), p_shape)),
  }


def measure(steps: dict[str, Callable[[], None]], repeats: int, iters: int):
  """Median seconds per step of each variant, the variants interleaved in every repeat."""
  for run in steps.values():  # Compile and warm up.
    for _ in range(3):
      run()
  times = {name: [] for name in steps}
  for _ in range(repeats):
    for name, run in steps.items():
      start = time.perf_counter()
      for _ in range(iters):
        run()
      times[name].append((time.perf_counter() - start) / iters)
  return times


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_integer("repeats", REPEATS, "Interleaved repeats.")
  flags.DEFINE_integer("iters", ITERS, "Steps timed in each repeat.")
  flags.DEFINE_bool("smoke", False, "Tiny shapes, 2 repeats.")
  flags.DEFINE_string("json", os.path.join("out", "bernoulli_mask.json"),
                      "Where to write the JSON.")


def settings(quick: bool) -> dict:
  """run()'s arguments for a full or a quick (smoke) run."""
  return {"smoke": quick}


def run(repeats: int = REPEATS, iters: int = ITERS, smoke: bool = False,
        json_path: str | None = None) -> dict:
  """Runs the benchmark, prints its table, writes JSON; returns the JSON payload."""
  repeats, iters = (2, 1) if smoke else (repeats, iters)
  p_shape, f_shape = _shapes(smoke)
  results = {"p_shape": p_shape, "features_shape": f_shape, "repeats": repeats,
             "iters": iters, "frameworks": {}}
  env = {"python": sys.version.split()[0], "platform": platform.platform(),
         "processor": platform.processor(), "cpus": os.cpu_count(), "numpy": np.__version__}
  print(f"features {f_shape} ({int(np.prod(f_shape))} elements), p {p_shape}; "
        f"median of {repeats} interleaved repeats x {iters} steps")
  print(f"{'framework':<11} {'noise':<8} {'op ms':>8} {'hand ms':>8} {'op/hand':>8} "
        f"{'quartiles':>13}")
  for name, build in (("tensorflow", tensorflow_steps), ("jax", jax_steps)):
    times = measure(build(p_shape, f_shape), repeats, iters)
    module = sys.modules[name]
    env[name] = module.__version__
    env[f"{name}_device"] = (
        ("gpu" if module.config.list_physical_devices("GPU") else "cpu")
        if name == "tensorflow" else module.devices()[0].platform)
    results["frameworks"][name] = {}
    for noise in dict.fromkeys(name.split("/")[0] for name in times):
      op, hand = np.array(times[f"{noise}/op"]), np.array(times[f"{noise}/handwritten"])
      row = {"op_ms": 1e3 * float(np.median(op)), "handwritten_ms": 1e3 * float(np.median(hand)),
             "ratio": float(np.median(op / hand)),
             "ratio_quartiles": np.percentile(op / hand, [25, 75]).tolist(),
             "op_ms_all": (1e3 * op).tolist(), "handwritten_ms_all": (1e3 * hand).tolist()}
      results["frameworks"][name][noise] = row
      print(f"{name:<11} {noise:<8} {row['op_ms']:8.3f} {row['handwritten_ms']:8.3f} "
            f"{row['ratio']:8.3f} {row['ratio_quartiles'][0]:6.3f}-{row['ratio_quartiles'][1]:.3f}")
  results["environment"] = env
  print("ratio: median over repeats of op time / hand-written time in the same repeat")
  if json_path:
    os.makedirs(os.path.dirname(json_path) or ".", exist_ok=True)
    with open(json_path, "w") as f:
      json.dump(results, f, indent=1)
    print(f"wrote {json_path}")
  return results


def main(argv):
  del argv  # Unused.
  run(FLAGS.repeats, FLAGS.iters, FLAGS.smoke, json_path=FLAGS.json)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
