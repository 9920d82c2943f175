r"""The simple network of the "Override Tensorflow Backward-Propagation" post in TensorFlow 2,
JAX and PyTorch.

    d = data + c;  e = custom_add(c, k, d);  a = d * e
    loss = softmax_cross_entropy(logits=a, onehot_labels=[0, 1]);  Adam(lr=1e-3, eps=0.1)

``custom_add`` carries the post's overridden gradient. The frameworks (PyTorch where it
is installed) start from the same truncated-normal values and print their loss curves
side by side, with the largest gap between them:

  python -m crossgrad.examples.simple_network --steps=200
"""

from __future__ import annotations

import numpy as np
from absl import flags

import crossgrad as cg
from crossgrad.cli import usage

DATA = np.array([1.0, 2.0], np.float32)
LABELS = np.array([0.0, 1.0], np.float32)  # The post's labels, fed as one-hot.
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


def train_torch(c0: np.ndarray, k0: np.ndarray, steps: int) -> list[float]:
  import torch  # pylint: disable=g-import-not-at-top
  custom_add = cg.torch.get("custom_add")
  data, labels = torch.as_tensor(DATA), torch.as_tensor(LABELS)
  params = [torch.nn.Parameter(torch.tensor(c0)), torch.nn.Parameter(torch.tensor(k0))]  # Copies.
  m, v = [torch.zeros(2) for _ in params], [torch.zeros(2) for _ in params]
  losses = []
  for t in range(1, steps + 1):
    c, k = params
    d = data + c
    loss = -torch.sum(labels * torch.log_softmax(d * custom_add(c, k, d), 0))
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():  # Adam as in train_jax (torch.optim.Adam puts epsilon elsewhere).
      lr = LEARNING_RATE * (1 - BETA2**t) ** 0.5 / (1 - BETA1**t)
      for p, mi, vi, g in zip(params, m, v, grads):
        mi.add_((g - mi) * (1 - BETA1))
        vi.add_((g * g - vi) * (1 - BETA2))
        p.sub_(lr * mi / (vi.sqrt() + EPSILON))
    losses.append(float(loss))
  return losses


def frameworks() -> list[str]:
  """TensorFlow and JAX, and PyTorch where it is installed."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  return ["tensorflow", "jax"] + (["torch"] if importlib.util.find_spec("torch") else [])


def run(steps: int, seed: int = 0) -> dict[str, list[float]]:
  """Trains each framework from the same start: {framework: loss curve}."""
  c0, k0 = initial_values(seed)
  train = {"tensorflow": train_tensorflow, "jax": train_jax, "torch": train_torch}
  return {name: train[name](c0, k0, steps) for name in frameworks()}


def main(argv):
  del argv
  curves = run(flags.FLAGS.steps, flags.FLAGS.seed)
  losses = np.array(list(curves.values()))
  print(f"{'step':>5} " + " ".join(f"{name:>12}" for name in curves) + f" {'max |diff|':>10}")
  every = max(1, losses.shape[1] // 20)
  for i in sorted(set(range(0, losses.shape[1], every)) | {losses.shape[1] - 1}):
    print(f"{i + 1:5d} " + " ".join(f"{x:12.6f}" for x in losses[:, i])
          + f" {np.ptp(losses[:, i]):10.2e}")


if __name__ == "__main__":
  # Flags are defined here, not on import, so tests can import `run` freely.
  flags.DEFINE_integer("steps", 200, "Adam steps in each framework.")
  flags.DEFINE_integer("seed", 0, "Seed of the initial values.")
  usage.run(main)
