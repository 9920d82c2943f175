r"""A positive-weight layer (the layer-gradient Q&A, example 2) learning a non-negative regression,
in TensorFlow (Keras `PositiveDense`) and JAX (the `positive_matmul` op in a plain function).

Data: ``Y = X W_true^T + noise`` with ``W_true >= 0`` and about a third of its entries
zero. Fitting ``Y ~ X relu(W)^T`` by gradient descent on the mean squared error is
non-negative least squares: the weights the layer applies (``relu(W)``) stay >= 0 at
every step, a weight pushed to zero stops there (its gradient is masked), and the result
is compared with SciPy's exact NNLS solver and with unconstrained least squares. (A
step too large can carry a weight whose optimum is small but positive below zero,
where it stays: with learning rate 0.5 and seed 0 one does, 7e-3 short of NNLS.) Both
frameworks start from the same weights; the loss curves and the weights are saved as a
PNG.

  python -m crossgrad.examples.positive_weights --steps=200 --out_dir=out
"""

from __future__ import annotations

import dataclasses
import os

from absl import flags
import numpy as np

from crossgrad.cli import usage

FLAGS = flags.FLAGS

N, N_IN, UNITS = 256, 8, 3
LEARNING_RATE = 0.2  # At 0.5 a weight can overshoot below zero and stay there.
NOISE = 0.3


@dataclasses.dataclass
class Problem:
  x: np.ndarray  # (N, N_IN)
  y: np.ndarray  # (N, UNITS)
  w_true: np.ndarray  # (UNITS, N_IN), >= 0
  w_init: np.ndarray  # (UNITS, N_IN), > 0, shared by both frameworks


@dataclasses.dataclass
class Fit:
  losses: list[float]
  min_applied_weight: float  # Smallest entry of relu(W) over all steps.
  kernel: np.ndarray  # The raw W after training.

  @property
  def applied(self) -> np.ndarray:
    return np.maximum(self.kernel, 0.0)


def make_problem(seed: int = 0) -> Problem:
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((N, N_IN))
  w_true = rng.uniform(0.2, 1.0, (UNITS, N_IN)) * (rng.uniform(size=(UNITS, N_IN)) > 0.35)
  y = x @ w_true.T + NOISE * rng.standard_normal((N, UNITS))
  w_init = rng.uniform(0.0, np.sqrt(6.0 / (N_IN + UNITS)), (UNITS, N_IN))
  return Problem(*(a.astype(np.float32) for a in (x, y, w_true, w_init)))


def fit_tensorflow(problem: Problem, steps: int) -> Fit:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from crossgrad.layers import PositiveDense  # pylint: disable=g-import-not-at-top
  layer = PositiveDense(UNITS, use_bias=False)
  layer.build((None, N_IN))
  layer.kernel.assign(problem.w_init)
  optimizer = tf.keras.optimizers.SGD(LEARNING_RATE)

  @tf.function(jit_compile=True)
  def step(x, y):
    with tf.GradientTape() as tape:
      loss = 0.5 * tf.reduce_mean(tf.reduce_sum(tf.square(layer(x) - y), axis=1))
    optimizer.apply_gradients(zip(tape.gradient(loss, [layer.kernel]), [layer.kernel]))
    return loss, tf.reduce_min(layer.effective_kernel)

  losses, lowest = [], np.inf
  for _ in range(steps):
    loss, low = step(problem.x, problem.y)
    losses.append(float(loss))
    lowest = min(lowest, float(low))
  return Fit(losses, lowest, layer.kernel.numpy())


def fit_jax(problem: Problem, steps: int) -> Fit:
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  positive_matmul = cg.jax.get("positive_matmul")

  def loss_fn(params, x, y):
    return 0.5 * jnp.mean(jnp.sum(jnp.square(positive_matmul(x, params["kernel"]) - y), axis=1))

  @jax.jit
  def step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    return params, loss, jnp.min(jax.nn.relu(params["kernel"]))

  params = {"kernel": jnp.asarray(problem.w_init)}
  losses, lowest = [], np.inf
  for _ in range(steps):
    params, loss, low = step(params, problem.x, problem.y)
    losses.append(float(loss))
    lowest = min(lowest, float(low))
  return Fit(losses, lowest, np.asarray(params["kernel"]))


def reference_solutions(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
  """SciPy's NNLS and unconstrained least squares, one output unit at a time."""
  from scipy import optimize  # pylint: disable=g-import-not-at-top
  x, y = problem.x.astype(np.float64), problem.y.astype(np.float64)
  nnls = np.stack([optimize.nnls(x, y[:, k])[0] for k in range(UNITS)])
  lstsq = np.linalg.lstsq(x, y, rcond=None)[0].T
  return nnls, lstsq


def save_plot(fits: dict, problem: Problem, nnls: np.ndarray, lstsq: np.ndarray,
              out_dir: str) -> str:
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  os.makedirs(out_dir, exist_ok=True)
  fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5))
  for (name, fit), style in zip(fits.items(), ("-", "--")):
    left.semilogy(fit.losses, style, label=name)
  left.set(xlabel="step", ylabel="mean squared error / 2", title="same start, same data")
  left.legend()
  columns = {"true": problem.w_true, "scipy nnls": nnls, "least squares": lstsq,
             **{f"{name} relu(W)": fit.applied for name, fit in fits.items()}}
  index = np.arange(UNITS * N_IN)
  width = 0.8 / len(columns)
  for i, (name, w) in enumerate(columns.items()):
    right.bar(index + i * width, w.ravel(), width, label=name)
  right.axhline(0.0, color="black", lw=0.5)
  right.set(xlabel="weight (unit-major)", ylabel="value", title="learned weights")
  right.legend(fontsize=8)
  path = os.path.join(out_dir, "positive_weights.png")
  fig.savefig(path, dpi=90)
  plt.close(fig)
  return path


def run(steps: int, seed: int = 0):
  """Returns the problem, {framework: Fit} and the (nnls, lstsq) references."""
  problem = make_problem(seed)
  fits = {"tensorflow": fit_tensorflow(problem, steps), "jax": fit_jax(problem, steps)}
  return problem, fits, reference_solutions(problem)


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_integer("steps", 200, "Full-batch descent steps.")
  flags.DEFINE_integer("seed", 0, "Seed of data and initial weights.")
  flags.DEFINE_string("out_dir", "out", "Where the PNG goes.")


def main(argv):
  del argv  # Unused.
  problem, fits, (nnls, lstsq) = run(FLAGS.steps, FLAGS.seed)
  print(f"least squares: smallest weight {lstsq.min():+.4f} "
        f"({np.sum(lstsq < 0)} of {lstsq.size} negative)")
  print(f"scipy NNLS: {np.sum(nnls == 0)} weights at zero")
  print(f"{'framework':>10} {'final loss':>11} {'min relu(W) ever':>17} "
        f"{'max |relu(W) - nnls|':>21} {'W <= 0 (stopped)':>17}")
  for name, fit in fits.items():
    print(f"{name:>10} {fit.losses[-1]:11.6f} {fit.min_applied_weight:17.4f} "
          f"{np.max(np.abs(fit.applied - nnls)):21.2e} {np.sum(fit.kernel <= 0):17d}")
  print("wrote", save_plot(fits, problem, nnls, lstsq, FLAGS.out_dir))


if __name__ == "__main__":
  define_flags()
  usage.run(main)
