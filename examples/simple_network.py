r"""The seeds' simple network (seeds 000 and 003) in TensorFlow 2 and in JAX.

    d = data + c;  e = custom_add(c, k, d);  a = d * e
    loss = softmax_cross_entropy(logits=a, onehot_labels=[0, 1]);  Adam(lr=1e-3, eps=0.1)

``custom_add`` carries the seeds' overridden gradient. Both frameworks start from the
same truncated-normal values and print their loss curves side by side:

  python -m crossgrad.examples.simple_network --steps=200
"""

from __future__ import annotations

import numpy as np
from absl import app
from absl import flags

import crossgrad as cg

DATA = np.array([1.0, 2.0], np.float32)
LABELS = np.array([0.0, 1.0], np.float32)  # The seed's labels, fed as one-hot.
LEARNING_RATE, BETA1, BETA2, EPSILON = 1e-3, 0.9, 0.999, 0.1

def initial_values(seed: int) -> tuple[np.ndarray, np.ndarray]:
  """c and k: truncated normal (stddev 0.1, cut at two stddevs), as in the seed."""
  rng = np.random.default_rng(seed)

  def truncated(shape):
    z = rng.standard_normal(shape)
    while np.any(np.abs(z) > 2):
      z = np.where(np.abs(z) > 2, rng.standard_normal(shape), z)
    return (0.1 * z).astype(np.float32)

  return truncated((2,)), truncated((2,))


def train_tensorflow(c0: np.ndarray, k0: np.ndarray, steps: int) -> list[float]:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  custom_add = cg.tensorflow.get("custom_add")
  c, k = tf.Variable(c0), tf.Variable(k0)
  optimizer = tf.keras.optimizers.Adam(LEARNING_RATE, BETA1, BETA2, EPSILON)

  @tf.function(jit_compile=True)
  def step():
    with tf.GradientTape() as tape:
      d = DATA + c
      a = d * custom_add(c, k, d)
      loss = tf.nn.softmax_cross_entropy_with_logits(LABELS, a)
    optimizer.apply_gradients(zip(tape.gradient(loss, [c, k]), [c, k]))
    return loss

  return [float(step()) for _ in range(steps)]


def train_jax(c0: np.ndarray, k0: np.ndarray, steps: int) -> list[float]:
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  custom_add = cg.jax.get("custom_add")

  def loss_fn(params):
    c, k = params
    d = DATA + c
    a = d * custom_add(c, k, d)
    return -jnp.sum(LABELS * jax.nn.log_softmax(a))

  @jax.jit
  def step(params, moments, t):
    loss, grads = jax.value_and_grad(loss_fn)(params)
    m, v = moments
    m = [mi + (g - mi) * (1 - BETA1) for mi, g in zip(m, grads)]
    v = [vi + (g * g - vi) * (1 - BETA2) for vi, g in zip(v, grads)]
    # Adam as tf.keras (and TF1's AdamOptimizer) apply it: epsilon outside the bias fix.
    lr = LEARNING_RATE * jnp.sqrt(1 - BETA2**t) / (1 - BETA1**t)
    params = [p - lr * mi / (jnp.sqrt(vi) + EPSILON) for p, mi, vi in zip(params, m, v)]
    return params, (m, v), loss

  params = [jnp.asarray(c0), jnp.asarray(k0)]
  moments = ([jnp.zeros(2)] * 2, [jnp.zeros(2)] * 2)
  losses = []
  for t in range(1, steps + 1):
    params, moments, loss = step(params, moments, float(t))
    losses.append(float(loss))
  return losses


def run(steps: int, seed: int = 0) -> tuple[list[float], list[float]]:
  """Trains both frameworks from the same start; returns (tensorflow, jax) loss curves."""
  c0, k0 = initial_values(seed)
  return train_tensorflow(c0, k0, steps), train_jax(c0, k0, steps)


def main(argv):
  del argv
  tf_losses, jax_losses = run(flags.FLAGS.steps, flags.FLAGS.seed)
  print(f"{'step':>5} {'tensorflow':>12} {'jax':>12} {'|diff|':>10}")
  every = max(1, len(tf_losses) // 20)
  for i in sorted(set(range(0, len(tf_losses), every)) | {len(tf_losses) - 1}):
    print(f"{i + 1:5d} {tf_losses[i]:12.6f} {jax_losses[i]:12.6f} "
          f"{abs(tf_losses[i] - jax_losses[i]):10.2e}")


if __name__ == "__main__":
  # Flags are defined here, not on import, so tests can import `run` freely.
  flags.DEFINE_integer("steps", 200, "Adam steps in each framework.")
  flags.DEFINE_integer("seed", 0, "Seed of the initial values.")
  app.run(main)
