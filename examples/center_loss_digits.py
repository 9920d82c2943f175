r"""Softmax + center loss (Wen et al., ECCV 2016, via Shigapova's course) on scikit-learn's digits,
in TensorFlow, JAX and PyTorch (where installed).

A small network maps each 8x8 digit to a 2-D feature, as the paper's Fig. 2 does for
MNIST, followed by a linear softmax over the 10 classes. The loss of a batch is the
paper's Eq. 5, sums over the batch:

    L = L_softmax + lambda * L_center,   L_center = 1/2 sum_i ||f_i - c[y_i]||^2

crossgrad's `center_loss` hands the centers the paper's update as their gradient, so
plain SGD with learning rate alpha / lambda on them is ``c_j <- c_j - alpha delta c_j``:
no separate center-update op to remember. The network uses SGD with momentum. All
frameworks start from the same weights and see the same batches, with lambda = 0
(softmax only) and lambda > 0; the features and the loss curves are saved as PNGs.

  python -m crossgrad.examples.center_loss_digits --epochs=30 --out_dir=out
"""

from __future__ import annotations

import dataclasses
import os
from typing import Sequence

from absl import flags
import numpy as np

from crossgrad.cli import usage

FLAGS = flags.FLAGS

SIZES = (64, 32, 2, 10)  # Pixels -> hidden -> 2-D feature -> class logits.
BATCH = 64
LEARNING_RATE, MOMENTUM = 1e-3, 0.9
NUM_TEST = 500


@dataclasses.dataclass
class Setup:
  """What both frameworks share: data, batch order, initial weights, hyperparameters."""

  x_train: np.ndarray
  y_train: np.ndarray
  x_test: np.ndarray
  y_test: np.ndarray
  batches: list[np.ndarray]  # Index arrays into the training set, in order.
  weights: list[tuple[np.ndarray, np.ndarray]]  # (kernel (in, out), bias) per layer.
  lam: float
  alpha: float

  @property
  def center_learning_rate(self) -> float:
    return self.alpha / self.lam if self.lam else 0.0


@dataclasses.dataclass
class Result:
  losses: list[float]  # Per training step.
  features: np.ndarray  # Test features (NUM_TEST, 2) after training.
  centers: np.ndarray
  accuracy: float  # On the test set.


def make_setup(epochs: int, lam: float, alpha: float, seed: int = 0) -> Setup:
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  digits = datasets.load_digits()
  rng = np.random.default_rng(seed)
  order = rng.permutation(len(digits.target))
  x = (digits.data[order] / 16.0).astype(np.float32)
  y = digits.target[order].astype(np.int32)
  n_train = len(y) - NUM_TEST
  batches = []
  for _ in range(epochs):
    perm = rng.permutation(n_train)
    batches += [perm[i:i + BATCH] for i in range(0, n_train - BATCH + 1, BATCH)]
  weights = []
  for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
    limit = np.sqrt(6.0 / (n_in + n_out))
    weights.append((rng.uniform(-limit, limit, (n_in, n_out)).astype(np.float32),
                    np.zeros(n_out, np.float32)))
  return Setup(x[:n_train], y[:n_train], x[n_train:], y[n_train:], batches, weights, lam,
               alpha)


def train_tensorflow(setup: Setup) -> Result:
  """Keras Dense layers and crossgrad's Keras `CenterLoss`, one XLA-compiled step."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from crossgrad.layers import CenterLoss  # pylint: disable=g-import-not-at-top
  layers = [tf.keras.layers.Dense(n, activation=a)
            for n, a in zip(SIZES[1:], ("relu", None, None))]
  for layer, (n_in, _), (kernel, bias) in zip(layers, zip(SIZES, SIZES[1:]), setup.weights):
    layer.build((None, n_in))
    layer.set_weights([kernel, bias])
  center_loss = CenterLoss(SIZES[-1], weight=setup.lam)
  center_loss.build((None, SIZES[2]))
  variables = [v for layer in layers for v in (layer.kernel, layer.bias)]
  velocities = [tf.Variable(tf.zeros_like(v)) for v in variables]

  def features(x):
    return layers[1](layers[0](x))

  @tf.function(jit_compile=True)
  def step(x, y):
    with tf.GradientTape() as tape:
      f = features(x)
      softmax = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(y, layers[2](f)))
      loss = softmax + center_loss(f, y)
    *grads, center_grad = tape.gradient(loss, variables + [center_loss.centers])
    for v, velocity, g in zip(variables, velocities, grads):
      velocity.assign(MOMENTUM * velocity + g)
      v.assign_sub(LEARNING_RATE * velocity)
    center_loss.centers.assign_sub(setup.center_learning_rate * center_grad)
    return loss

  losses = [float(step(setup.x_train[b], setup.y_train[b])) for b in setup.batches]
  test_features = features(setup.x_test)
  predictions = np.argmax(layers[2](test_features).numpy(), axis=1)
  return Result(losses, test_features.numpy(), center_loss.centers.numpy(),
                float(np.mean(predictions == setup.y_test)))


def train_jax(setup: Setup) -> Result:
  """The same network as plain functions, with crossgrad's JAX ``center_loss`` op."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  center_loss = cg.jax.get("center_loss")

  def features(weights, x):
    (k1, b1), (k2, b2), _ = weights
    return jax.nn.relu(x @ k1 + b1) @ k2 + b2

  def loss_fn(params, x, y):
    weights, centers = params
    f = features(weights, x)
    k3, b3 = weights[2]
    log_p = jax.nn.log_softmax(f @ k3 + b3)
    softmax = -jnp.sum(jnp.take_along_axis(log_p, y[:, None], axis=1))
    return softmax + setup.lam * center_loss(f, y, centers)

  @jax.jit
  def step(params, velocities, x, y):
    loss, (grads, center_grad) = jax.value_and_grad(loss_fn)(params, x, y)
    velocities = jax.tree.map(lambda v, g: MOMENTUM * v + g, velocities, grads)
    weights = jax.tree.map(lambda w, v: w - LEARNING_RATE * v, params[0], velocities)
    centers = params[1] - setup.center_learning_rate * center_grad
    return (weights, centers), velocities, loss

  weights = [tuple(jnp.asarray(a) for a in layer) for layer in setup.weights]
  params = (weights, jnp.zeros((SIZES[-1], SIZES[2]), jnp.float32))  # Centers start at 0.
  velocities = jax.tree.map(jnp.zeros_like, weights)
  losses = []
  for b in setup.batches:
    params, velocities, loss = step(params, velocities, setup.x_train[b], setup.y_train[b])
    losses.append(float(loss))
  test_features = features(params[0], setup.x_test)
  k3, b3 = params[0][2]
  predictions = np.argmax(np.asarray(test_features @ k3 + b3), axis=1)
  return Result(losses, np.asarray(test_features), np.asarray(params[1]),
                float(np.mean(predictions == setup.y_test)))


def train_torch(setup: Setup) -> Result:
  """The same network in torch, with crossgrad's torch ``center_loss`` op and the centers a
  `torch.nn.Parameter` (the Keras `CenterLoss` is a `torch.nn.Module` under Keras' torch
  backend; this loop is plain torch)."""
  import torch  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  center_loss = cg.torch.get("center_loss")
  layers = [torch.nn.Linear(n_in, n_out) for n_in, n_out in zip(SIZES[:-1], SIZES[1:])]
  with torch.no_grad():
    for layer, (kernel, bias) in zip(layers, setup.weights):
      layer.weight.copy_(torch.as_tensor(kernel.T))
      layer.bias.copy_(torch.as_tensor(bias))
  centers = torch.nn.Parameter(torch.zeros(SIZES[-1], SIZES[2]))
  variables = [p for layer in layers for p in layer.parameters()]
  velocities = [torch.zeros_like(v) for v in variables]

  def features(x):
    return layers[1](torch.relu(layers[0](x)))

  losses = []
  for b in setup.batches:
    x, y = torch.as_tensor(setup.x_train[b]), torch.as_tensor(setup.y_train[b])
    f = features(x)
    softmax = torch.nn.functional.cross_entropy(layers[2](f), y.long(), reduction="sum")
    loss = softmax + setup.lam * center_loss(f, y, centers)
    *grads, center_grad = torch.autograd.grad(loss, variables + [centers])
    with torch.no_grad():  # Momentum SGD as in the other frameworks.
      for v, velocity, g in zip(variables, velocities, grads):
        velocity.mul_(MOMENTUM).add_(g)
        v.sub_(LEARNING_RATE * velocity)
      centers.sub_(setup.center_learning_rate * center_grad)
    losses.append(float(loss))
  with torch.no_grad():
    test_features = features(torch.as_tensor(setup.x_test))
    predictions = np.argmax(layers[2](test_features).numpy(), axis=1)
  return Result(losses, test_features.numpy(), centers.detach().numpy(),
                float(np.mean(predictions == setup.y_test)))


def frameworks() -> tuple[str, ...]:
  """TensorFlow and JAX, and PyTorch where it is installed."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  return ("tensorflow", "jax") + (("torch",) if importlib.util.find_spec("torch") else ())


def compactness(features: np.ndarray, labels: np.ndarray) -> float:
  """Mean distance to the own class mean over the mean distance between class means.

  Scale-free, so runs whose features have different magnitudes compare; lower is
  more compact.
  """
  means = np.stack([features[labels == k].mean(axis=0) for k in np.unique(labels)])
  within = np.mean(np.linalg.norm(features - means[labels], axis=1))
  between = np.mean([np.linalg.norm(a - b) for i, a in enumerate(means) for b in means[i + 1:]])
  return float(within / between)


def run(epochs: int, lam: float, alpha: float, seed: int = 0) -> dict:
  """Trains every framework with lambda = 0 and with ``lam``: {lambda: {framework: Result}}."""
  train = {"tensorflow": train_tensorflow, "jax": train_jax, "torch": train_torch}
  results = {}
  for weight in (0.0, lam):
    setup = make_setup(epochs, weight, alpha, seed)
    results[weight] = {name: train[name](setup) for name in frameworks()}
  return results


def relative_gap(losses: Sequence[float], reference: Sequence[float]) -> np.ndarray:
  """``|losses - reference| / |reference|`` per step."""
  reference = np.asarray(reference)
  return np.abs(np.asarray(losses) - reference) / np.abs(reference)


def save_plots(results: dict, labels: np.ndarray, out_dir: str) -> list[str]:
  """The 2-D test features (rows: lambda, columns: framework) and the loss curves."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  os.makedirs(out_dir, exist_ok=True)
  names = list(next(iter(results.values())))
  fig, axes = plt.subplots(len(results), len(names), figsize=(5 * len(names), 5 * len(results)),
                           squeeze=False)
  for row, (lam, by_framework) in enumerate(results.items()):
    for col, name in enumerate(names):
      result, ax = by_framework[name], axes[row][col]
      ax.scatter(*result.features.T, c=labels, cmap="tab10", s=6, vmin=-0.5, vmax=9.5)
      if lam:
        ax.scatter(*result.centers.T, c="black", marker="x", s=60, label="centers")
        ax.legend(loc="best")
      ax.set_title(f"{name}, lambda={lam:g}: test acc {result.accuracy:.3f}, "
                   f"compactness {compactness(result.features, labels):.3f}", fontsize=9)
  fig.suptitle("2-D features of the digits test set (softmax only, then + center loss)")
  features_png = os.path.join(out_dir, "center_loss_digits_features.png")
  fig.savefig(features_png, dpi=90)
  plt.close(fig)

  fig, axes = plt.subplots(1, len(names) + 1, figsize=(5 * (len(names) + 1), 4.5))
  for lam, by_framework in results.items():
    for ax, name in zip(axes, names):
      ax.plot(by_framework[name].losses, lw=0.8, label=f"lambda={lam:g}")
      ax.set(xlabel="step", ylabel="batch loss (sum over the batch)", yscale="log",
             title=name)
    for name in names[1:]:
      gap = relative_gap(by_framework[name].losses, by_framework[names[0]].losses)
      steps = np.arange(len(gap))
      axes[-1].semilogy(steps[gap > 0], gap[gap > 0], ".", ms=3,
                        label=f"{name}, lambda={lam:g}")
  axes[-1].set(xlabel="step", ylabel=f"|x - {names[0]}| / |{names[0]}| (exact zeros not drawn)",
               title="same seed, same batches: relative gap")
  for ax in axes:
    ax.legend()
  curves_png = os.path.join(out_dir, "center_loss_digits_curves.png")
  fig.savefig(curves_png, dpi=90)
  plt.close(fig)
  return [features_png, curves_png]


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_integer("epochs", 30, "Passes over the training set.")
  flags.DEFINE_float("lam", 0.1, "Weight lambda of the center loss.")
  flags.DEFINE_float("alpha", 0.5, "The paper's center rate alpha.")
  flags.DEFINE_integer("seed", 0, "Seed of weights, split, batches.")
  flags.DEFINE_string("out_dir", "out", "Where the PNGs go.")


def main(argv):
  del argv  # Unused.
  results = run(FLAGS.epochs, FLAGS.lam, FLAGS.alpha, FLAGS.seed)
  labels = make_setup(0, 0.0, 0.0, FLAGS.seed).y_test
  print(f"{'lambda':>7} {'framework':>10} {'final loss':>11} {'test acc':>9} "
        f"{'compactness':>12}")
  for lam, by_framework in results.items():
    for name, r in by_framework.items():
      print(f"{lam:7g} {name:>10} {r.losses[-1]:11.4f} {r.accuracy:9.3f} "
            f"{compactness(r.features, labels):12.3f}")
    tf_losses = by_framework["tensorflow"].losses
    for name in list(by_framework)[1:]:
      print(f"        max |tf - {name}| / |tf| over {len(tf_losses)} steps: "
            f"{np.max(relative_gap(by_framework[name].losses, tf_losses)):.2e}")
  for path in save_plots(results, labels, FLAGS.out_dir):
    print("wrote", path)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
