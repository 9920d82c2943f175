"""A small sparse CNN trained on handwritten digits turned into sparse strokes.

scikit-learn's 8x8 digits become 24x24 stroke images: the pixel centres above half
intensity, 3 pixels apart, joined to their active neighbours by 1-pixel lines (about
15% of the sites active). The network is two sparse 3x3 convolutions (1 -> 8 -> 16
channels, ReLU on the active values and the ground state alike), a mean over each
quadrant of the 20x20 grid (active sites and ground state) and a linear classifier. It trains in
TensorFlow and in JAX from the same initial weights on the same batches, with every
example padded to one static capacity so each step is a single compiled function
(`tf.function(jit_compile=True)` over an unrolled batch, `jax.jit` of `jax.vmap`).

  python -m crossgrad.examples.sparse_digits [--steps=300] [--short]
"""

from __future__ import annotations

import dataclasses

from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.cli import usage
from crossgrad.sparse import rulebook

SIZE, SCALE = 24, 3
F = 3
CHANNELS = (1, 8, 16)


def strokes(images: np.ndarray) -> np.ndarray:
  """``n x 8 x 8`` digits (0..16) -> ``n x 24 x 24`` binary stroke images."""
  on = images > 8
  out = np.zeros((len(images), SIZE, SIZE), np.float32)
  n, r, c = np.nonzero(on)
  out[n, SCALE * r + 1, SCALE * c + 1] = 1.0
  for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
    both = on[n, r, c] & _shifted(on, dr, dc)[n, r, c]
    for t in range(1, SCALE):
      out[n[both], SCALE * r[both] + 1 + t * dr, SCALE * c[both] + 1 + t * dc] = 1.0
  return out


def _shifted(on: np.ndarray, dr: int, dc: int) -> np.ndarray:
  """``on[.., r + dr, c + dc]`` (False outside the image)."""
  padded = np.pad(on, ((0, 0), (1, 1), (1, 1)))
  return padded[:, 1 + dr:9 + dr, 1 + dc:9 + dc]


@dataclasses.dataclass(frozen=True)
class Data:
  """Examples padded to one capacity: H (n x cap x 2), M (n x cap x 1), counts, labels."""

  h: np.ndarray
  m: np.ndarray
  n_valid: np.ndarray
  labels: np.ndarray


def load(limit: int | None = None) -> tuple[Data, Data]:
  from sklearn.datasets import load_digits  # pylint: disable=g-import-not-at-top
  digits = load_digits()
  images, labels = digits.images[:limit], digits.target[:limit]
  sparse = [cg.SparseData.from_dense(image[..., None]) for image in strokes(images)]
  capacity = max(x.n_valid for x in sparse)
  h = np.full((len(sparse), capacity, 2), -1, np.int32)
  m = np.zeros((len(sparse), capacity, 1), np.float32)
  for k, x in enumerate(sparse):
    h[k, :x.n_valid], m[k, :x.n_valid] = x.H, x.M
  counts = np.array([x.n_valid for x in sparse], np.int32)
  split = len(sparse) * 3 // 4
  part = lambda s: Data(h[s], m[s], counts[s], labels[s].astype(np.int32))
  return part(slice(None, split)), part(slice(split, None))


def init_params(seed: int) -> list[np.ndarray]:
  rng = np.random.default_rng(seed)
  params = []
  for n_in, n_out in zip(CHANNELS, CHANNELS[1:]):
    params += [rng.standard_normal((F, F, n_in, n_out)).astype(np.float32)
               * np.float32(np.sqrt(2.0 / (F * F * n_in))), np.zeros(n_out, np.float32)]
  params += [rng.standard_normal((4 * CHANNELS[-1], 10)).astype(np.float32) * np.float32(0.3),
             np.zeros(10, np.float32)]
  return params


def capacities(capacity_in: int) -> tuple[int, int]:
  """Static output capacities of the two layers (never overflowing)."""
  first = rulebook.safe_capacity(capacity_in, (SIZE, SIZE, 1), F)
  return first, rulebook.safe_capacity(first, (SIZE - F + 1, SIZE - F + 1, 1), F)


def logits(backend: str, params, h, m, n_valid):
  """One example's class scores, written once against the backend's namespace."""
  module = getattr(cg, backend)
  xp = module.xp
  w1, b1, w2, b2, w3, b3 = params
  x = cg.SparseData(h, m, (SIZE, SIZE, 1), xp.zeros((1,), dtype=xp.float32), n_valid)
  for (w, b), capacity in zip(((w1, b1), (w2, b2)), capacities(h.shape[0])):
    x = module.sparse_conv2d(x, w, b, F, capacity=capacity)
    # where(), not maximum(): at 0 (the first ground state, with zero biases) JAX
    # splits maximum's gradient in halves and TensorFlow does not.
    relu = lambda v: xp.where(v > 0, v, xp.zeros_like(v))
    x = cg.SparseData(x.H, relu(x.M), x.dense_shape, relu(x.ground_state), x.n_valid)
  # Mean over each quadrant of the grid: active values plus the ground state elsewhere.
  half = x.dense_shape[0] // 2
  rows, cols = x.H[:, 0], x.H[:, 1]
  valid = xp.arange(x.capacity, dtype=xp.int32) < xp.astype(xp.asarray(x.n_valid), xp.int32)
  quadrant = xp.where(valid, xp.astype(rows >= half, xp.int32) * 2
                      + xp.astype(cols >= half, xp.int32), -1)
  sums = xp.segment_sum(x.M, quadrant, 4)
  counts = xp.segment_sum(xp.astype(valid, xp.float32), quadrant, 4)
  ground = (half * half - xp.reshape(counts, (4, 1))) * xp.reshape(x.ground_state, (1, -1))
  pooled = (sums + ground) / (half * half)
  return xp.matmul(xp.reshape(pooled, (1, -1)), w3)[0] + b3


def _cross_entropy(xp, scores, labels):
  shifted = scores - xp.max(scores, axis=1, keepdims=True)
  log_p = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
  return -xp.mean(xp.sum(log_p * labels, axis=1))


def _one_hot(labels):
  return np.eye(10, dtype=np.float32)[labels]


def train_jax(params, train: Data, batches, lr: float):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  xp = cg.jax.xp

  def batch_scores(params, h, m, n):
    return jax.vmap(lambda h, m, n: logits("jax", params, h, m, n))(h, m, n)

  def loss(params, h, m, n, y):
    return _cross_entropy(xp, batch_scores(params, h, m, n), y)

  @jax.jit
  def step(params, velocity, h, m, n, y):
    value, grads = jax.value_and_grad(loss)(params, h, m, n, y)
    velocity = [0.9 * v + g for v, g in zip(velocity, grads)]
    return [p - lr * v for p, v in zip(params, velocity)], velocity, value

  params = [jnp.asarray(p) for p in params]
  velocity = [jnp.zeros_like(p) for p in params]
  losses = []
  for batch in batches:
    params, velocity, value = step(params, velocity, train.h[batch], train.m[batch],
                                   train.n_valid[batch], _one_hot(train.labels[batch]))
    losses.append(float(value))
  predict = jax.jit(batch_scores)
  return losses, lambda d: np.asarray(predict(params, d.h, d.m, d.n_valid))


def train_tensorflow(params, train: Data, batches, lr: float):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  xp = cg.tensorflow.xp

  def batch_scores(params, h, m, n):
    return tf.stack([logits("tensorflow", params, h[k], m[k], n[k])
                     for k in range(h.shape[0])])

  variables = [tf.Variable(p) for p in params]
  velocity = [tf.Variable(tf.zeros_like(p)) for p in params]

  @tf.function(jit_compile=True, autograph=False)
  def step(h, m, n, y):
    with tf.GradientTape() as tape:
      value = _cross_entropy(xp, batch_scores(variables, h, m, n), y)
    for p, v, g in zip(variables, velocity, tape.gradient(value, variables)):
      v.assign(0.9 * v + g)
      p.assign_sub(lr * v)
    return value

  losses = [float(step(train.h[b], train.m[b], train.n_valid[b], _one_hot(train.labels[b])))
            for b in batches]
  predict = tf.function(batch_scores, jit_compile=True, autograph=False)

  def scores(d):
    return np.concatenate([predict(variables, d.h[s:s + 64], d.m[s:s + 64],
                                   d.n_valid[s:s + 64]).numpy()
                           for s in range(0, len(d.labels), 64)])
  return losses, scores


def run(steps: int = 300, batch: int = 16, lr: float = 0.3, seed: int = 0,
        short: bool = False) -> dict:
  """Trains both frameworks from the same start (``short``: 3 steps on 64 digits); prints
  and returns the losses and test accuracies."""
  steps, batch, limit = (3, 4, 64) if short else (steps, batch, None)
  train, test = load(limit)
  rng = np.random.default_rng(seed)
  batches = [rng.choice(len(train.labels), batch, replace=False) for _ in range(steps)]
  active = train.n_valid.mean() / SIZE**2
  print(f"{len(train.labels)} training / {len(test.labels)} test stroke digits, "
        f"{SIZE}x{SIZE}, {active:.0%} sites active on average, capacity {train.h.shape[1]}")
  results = {}
  for name, trainer in (("tensorflow", train_tensorflow), ("jax", train_jax)):
    losses, scores = trainer(init_params(seed), train, batches, lr)
    accuracy = float(np.mean(np.argmax(scores(test), 1) == test.labels))
    results[name] = {"losses": losses, "accuracy": accuracy}
    print(f"{name:11s} loss {losses[0]:.3f} -> {np.mean(losses[-10:]):.3f} "
          f"(last 10 steps), test accuracy {accuracy:.1%}")
  gap = np.abs(np.subtract(results["tensorflow"]["losses"], results["jax"]["losses"]))
  first = int(np.argmax(gap > 1e-4 * np.abs(results["jax"]["losses"]))) if (
      gap > 1e-4 * np.abs(results["jax"]["losses"])).any() else steps
  print(f"TF and JAX losses agree to 1e-4 (relative) for the first {first} of {steps} steps")
  return results


def main(argv):
  del argv
  run(flags.FLAGS.steps, flags.FLAGS.batch, flags.FLAGS.lr, flags.FLAGS.seed, flags.FLAGS.short)


if __name__ == "__main__":
  flags.DEFINE_integer("steps", 300, "Training steps in each framework.")
  flags.DEFINE_integer("batch", 16, "Examples per step.")
  flags.DEFINE_float("lr", 0.3, "SGD learning rate (momentum 0.9).")
  flags.DEFINE_integer("seed", 0, "Seed of the initial weights and the batches.")
  flags.DEFINE_bool("short", False, "3 steps on 64 digits (the test's mode).")
  usage.run(main)
