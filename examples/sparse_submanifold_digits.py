r"""A sparse CNN of submanifold layers with a downsampling step, on stroke digits.

scikit-learn's 8x8 digits become 24x24 stroke images (`sparse_digits.strokes`: about 15%
of the sites active, shipped offline). The network keeps the strokes sparse:

  submanifold 3x3, 1 -> 16, ReLU     (24x24; one rulebook for both layers)
  submanifold 3x3, 16 -> 16, ReLU
  sparse 2x2 stride 2, 16 -> 32, ReLU (downsampling to 12x12)
  submanifold 3x3, 32 -> 32, ReLU    (12x12; its own rulebook)
  mean over each 6x6 quadrant (active values and the ground state), linear 4*32 -> 10

It trains in TensorFlow and in JAX from the same initial weights on the same batches (SGD
with momentum, every example padded to one static capacity so a step is one compiled
function: `tf.function(jit_compile=True)` over an unrolled batch, `jax.jit` of
`jax.vmap`), compares the two loss curves, and times a step against the dense network of
the same shape (the same layers as dense convolutions over the whole grid, batched).

  python -m crossgrad.examples.sparse_submanifold_digits [--steps=300] [--short]
"""

from __future__ import annotations

import time

from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.cli import usage
from crossgrad.examples.sparse_digits import SIZE, Data, load
from crossgrad.sparse import rulebook

CHANNELS = (1, 16, 16, 32, 32)
KERNELS = (3, 3, 2, 3)
HALF = SIZE // 4  # Quadrants of the downsampled 12x12 grid.


def init_params(seed: int) -> list[np.ndarray]:
  """He-normal kernels and zero biases for the four layers, then the classifier."""
  rng = np.random.default_rng(seed)
  params = []
  for f, n_in, n_out in zip(KERNELS, CHANNELS, CHANNELS[1:]):
    scale = np.float32(np.sqrt(2.0 / (f * f * n_in)))
    params += [rng.standard_normal((f, f, n_in, n_out)).astype(np.float32) * scale,
               np.zeros(n_out, np.float32)]
  return params + [rng.standard_normal((4 * CHANNELS[-1], 10)).astype(np.float32)
                   * np.float32(0.3), np.zeros(10, np.float32)]


def logits(backend: str, params, h, m, n_valid):
  """One example's class scores, written once against the backend's namespace."""
  module = getattr(cg, backend)
  xp = module.xp
  w1, b1, w2, b2, w3, b3, w4, b4, w5, b5 = params
  relu = lambda v: xp.where(v > 0, v, xp.zeros_like(v))
  x = cg.SparseData(h, m, (SIZE, SIZE, 1), xp.zeros((1,), dtype=m.dtype), n_valid)
  book = cg.sparse.submanifold_rulebook(x, 3)  # Built once, used by both layers.
  x = module.submanifold_conv2d(x, w1, b1, rulebook=book).map(relu)
  x = module.submanifold_conv2d(x, w2, b2, rulebook=book).map(relu)
  capacity = rulebook.safe_capacity(x.capacity, x.dense_shape, 2, 2)
  x = module.sparse_conv2d(x, w3, b3, 2, stride=2, capacity=capacity).map(relu)
  x = module.submanifold_conv2d(x, w4, b4).map(relu)
  # Mean over each 6x6 quadrant of the 12x12 grid: active values plus the ground state.
  live = xp.arange(x.capacity, dtype=x.H.dtype) < x.n_valid
  rows, cols = x.H[:, 0], x.H[:, 1]
  quadrant = xp.where(live, xp.astype(rows >= HALF, x.H.dtype) * 2
                      + xp.astype(cols >= HALF, x.H.dtype), -1)
  sums = xp.segment_sum(x.M, quadrant, 4)
  counts = xp.segment_sum(xp.astype(live, x.M.dtype), quadrant, 4)
  pooled = (sums + (HALF * HALF - xp.reshape(counts, (4, 1))) * xp.reshape(x.ground_state,
                                                                          (1, -1)))
  return xp.matmul(xp.reshape(pooled, (1, -1)) / (HALF * HALF), w5)[0] + b5


def dense_logits(xp, conv, params, images):
  """The dense network of the same shape on a batch ``n x 24 x 24 x 1``, where ``conv(x,
  w, stride, padding)`` is the framework's convolution."""
  w1, b1, w2, b2, w3, b3, w4, b4, w5, b5 = params
  relu = lambda v: xp.where(v > 0, v, xp.zeros_like(v))
  x = relu(conv(images, w1, 1, "SAME") + b1)
  x = relu(conv(x, w2, 1, "SAME") + b2)
  x = relu(conv(x, w3, 2, "VALID") + b3)
  x = relu(conv(x, w4, 1, "SAME") + b4)
  n = x.shape[0]
  quadrants = xp.mean(xp.reshape(x, (n, 2, HALF, 2, HALF, -1)), axis=(2, 4))
  return xp.matmul(xp.reshape(quadrants, (n, -1)), w5) + b5


def cross_entropy(xp, scores, labels):
  shifted = scores - xp.max(scores, axis=1, keepdims=True)
  log_p = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
  return -xp.mean(xp.sum(log_p * labels, axis=1))


def images_of(data: Data, rows) -> np.ndarray:
  """Dense ``n x 24 x 24 x 1`` images of the examples ``rows``."""
  out = np.zeros((len(rows), SIZE, SIZE, 1), np.float32)
  for k, r in enumerate(rows):
    n = data.n_valid[r]
    out[k, data.h[r, :n, 0], data.h[r, :n, 1]] = data.m[r, :n]
  return out


def _one_hot(labels):
  return np.eye(10, dtype=np.float32)[labels]


def _timed(step, batches) -> tuple[list[float], float]:
  """Runs ``step(batch)`` (returning a float) over the batches; median seconds after the
  first (compiling) step."""
  values, seconds = [], []
  for batch in batches:
    start = time.perf_counter()
    values.append(float(step(batch)))
    seconds.append(time.perf_counter() - start)
  return values, float(np.median(seconds[1:])) if len(seconds) > 1 else seconds[0]


def train_jax(params, train: Data, batches, lr: float, dense: bool = False):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  xp = cg.jax.xp

  def conv(x, w, stride, padding):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), padding,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

  def batch_scores(params, h, m, n, images):
    if dense:
      return dense_logits(xp, conv, params, images)
    return jax.vmap(lambda h, m, n: logits("jax", params, h, m, n))(h, m, n)

  @jax.jit
  def step(params, velocity, h, m, n, images, y):
    value, grads = jax.value_and_grad(
        lambda p: cross_entropy(xp, batch_scores(p, h, m, n, images), y))(params)
    velocity = [0.9 * v + g for v, g in zip(velocity, grads)]
    return [p - lr * v for p, v in zip(params, velocity)], velocity, value

  state = {"params": [jnp.asarray(p) for p in params]}
  state["velocity"] = [jnp.zeros_like(p) for p in state["params"]]

  def one(batch):
    state["params"], state["velocity"], value = step(
        state["params"], state["velocity"], train.h[batch], train.m[batch], train.n_valid[batch],
        images_of(train, batch) if dense else None, _one_hot(train.labels[batch]))
    return value

  losses, seconds = _timed(one, batches)
  predict = jax.jit(lambda p, h, m, n: batch_scores(p, h, m, n, None))
  return losses, seconds, lambda d: np.asarray(predict(state["params"], d.h, d.m, d.n_valid))


def train_tensorflow(params, train: Data, batches, lr: float, dense: bool = False):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  xp = cg.tensorflow.xp

  def batch_scores(params, h, m, n, images):
    if dense:
      return dense_logits(xp, tf.nn.conv2d, params, images)
    return tf.stack([logits("tensorflow", params, h[k], m[k], n[k]) for k in range(h.shape[0])])

  variables = [tf.Variable(p) for p in params]
  velocity = [tf.Variable(tf.zeros_like(p)) for p in params]

  @tf.function(jit_compile=True, autograph=False)
  def step(h, m, n, images, y):
    with tf.GradientTape() as tape:
      value = cross_entropy(xp, batch_scores(variables, h, m, n, images), y)
    for p, v, g in zip(variables, velocity, tape.gradient(value, variables)):
      v.assign(0.9 * v + g)
      p.assign_sub(lr * v)
    return value

  losses, seconds = _timed(lambda b: step(
      train.h[b], train.m[b], train.n_valid[b],
      images_of(train, b) if dense else tf.zeros(()), _one_hot(train.labels[b])), batches)
  predict = tf.function(lambda h, m, n: batch_scores(variables, h, m, n, None),
                        jit_compile=True, autograph=False)

  def scores(d):
    return np.concatenate([predict(d.h[s:s + 32], d.m[s:s + 32], d.n_valid[s:s + 32]).numpy()
                           for s in range(0, len(d.labels), 32)])
  return losses, seconds, scores


def run(steps: int = 300, batch: int = 16, lr: float = 0.1, seed: int = 0,
        limit: int | None = None, dense_steps: int = 20) -> dict:
  """Trains both frameworks from the same start; times the dense network of the same shape
  for ``dense_steps`` steps. Returns losses, accuracies and seconds per step."""
  train, test = load(limit)
  rng = np.random.default_rng(seed)
  batches = [rng.choice(len(train.labels), batch, replace=False) for _ in range(steps)]
  results = {"active": float(train.n_valid.mean() / SIZE**2), "capacity": int(train.h.shape[1])}
  for name, trainer in (("tensorflow", train_tensorflow), ("jax", train_jax)):
    losses, seconds, scores = trainer(init_params(seed), train, batches, lr)
    _, dense_seconds, _ = trainer(init_params(seed), train, batches[:dense_steps], lr,
                                  dense=True)
    accuracy = float(np.mean(np.argmax(scores(test), 1) == test.labels))
    results[name] = {"losses": losses, "accuracy": accuracy, "step_seconds": seconds,
                     "dense_step_seconds": dense_seconds}
  tf_losses, jax_losses = (np.array(results[k]["losses"]) for k in ("tensorflow", "jax"))
  gap = np.abs(tf_losses - jax_losses) / np.abs(jax_losses)
  results["max_relative_gap"] = float(gap.max())
  results["steps_within_1e-4"] = int(np.argmax(gap > 1e-4)) if (gap > 1e-4).any() else steps
  return results


def main(argv):
  del argv
  flag = flags.FLAGS
  short = dict(steps=3, batch=4, limit=64, dense_steps=3) if flag.short else dict(
      steps=flag.steps, batch=flag.batch, dense_steps=flag.dense_steps)
  results = run(lr=flag.lr, seed=flag.seed, **short)
  print(f"stroke digits {SIZE}x{SIZE}, {results['active']:.0%} of sites active on average, "
        f"capacity {results['capacity']}")
  for name in ("tensorflow", "jax"):
    r = results[name]
    print(f"{name:11s} loss {r['losses'][0]:.3f} -> {np.mean(r['losses'][-10:]):.3f} (last 10), "
          f"test accuracy {r['accuracy']:.1%}; step {r['step_seconds'] * 1e3:.1f} ms sparse, "
          f"{r['dense_step_seconds'] * 1e3:.1f} ms dense (same shape)")
  print(f"TF vs JAX loss curves agree to 1e-4 (relative) for the first "
        f"{results['steps_within_1e-4']} of {len(results['jax']['losses'])} steps; largest gap "
        f"{results['max_relative_gap']:.1e}")


if __name__ == "__main__":
  flags.DEFINE_integer("steps", 300, "Training steps in each framework.")
  flags.DEFINE_integer("batch", 16, "Examples per step.")
  flags.DEFINE_integer("dense_steps", 20, "Steps of the dense network to time.")
  flags.DEFINE_float("lr", 0.1, "SGD learning rate (momentum 0.9).")
  flags.DEFINE_integer("seed", 0, "Seed of the initial weights and the batches.")
  flags.DEFINE_bool("short", False, "3 steps on 64 digits (the test's mode).")
  usage.run(main)
