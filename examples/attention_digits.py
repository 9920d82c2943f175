"""An attention-mask classifier on scikit-learn's digits, trained in TensorFlow and in JAX.

The model of arXiv 1710.11446 (docs/sources.md) at toy scale: per-pixel features ``F``
and an attention map ``p`` (both from the 3x3 neighbourhood of each pixel), a Bernoulli
sample of ``p`` multiplied with ``F`` (`bernoulli_mask`, surrogate gradient), then a
linear classifier. Both frameworks start from the same weights and see the same
batches. With ``--noise=shared`` (default) they also get the same uniform noise, so
their curves should coincide up to float32 rounding; ``--noise=threefry`` gets the same
masks without sharing anything but the seed (crossgrad's Threefry in TF, JAX's own
keys); with ``--noise=framework`` each draws its own masks (TF's Philox, JAX's
Threefry), so the curves differ by sampling noise only.
Evaluation uses the expectation ``p * F``. Prints loss and accuracy per epoch and saves
a PNG of both curves.

  python -m crossgrad.examples.attention_digits --epochs=30 --out=out/attention_digits.png
"""

from __future__ import annotations

import os

from absl import flags
import numpy as np

from crossgrad.cli import usage

FLAGS = flags.FLAGS

CHANNELS = 8
NOISE = ("shared", "threefry", "framework")
CLASSES = 10


def load_data(seed: int, train_size: int | None = None):
  """Digits scaled to [0, 1] as 3x3 patches (N, 64, 9), split 80/20 after a shuffle."""
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  digits = datasets.load_digits()
  images = digits.images.astype(np.float32) / 16.0
  padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
  patches = np.stack([padded[:, i:i + 8, j:j + 8] for i in range(3) for j in range(3)], -1)
  patches = patches.reshape(len(images), 64, 9)
  order = np.random.default_rng(seed).permutation(len(images))
  cut = int(0.8 * len(images))
  train, test = order[:cut][:train_size], order[cut:]
  return (patches[train], digits.target[train]), (patches[test], digits.target[test])


def init_params(seed: int) -> dict[str, np.ndarray]:
  rng = np.random.default_rng(seed)
  scaled = lambda shape, fan_in: (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(
      np.float32)
  return {"wf": scaled((9, CHANNELS), 9), "bf": np.zeros(CHANNELS, np.float32),
          "wa": scaled((9, 1), 9), "ba": np.zeros(1, np.float32),
          "wo": scaled((64 * CHANNELS, CLASSES), 64 * CHANNELS),
          "bo": np.zeros(CLASSES, np.float32)}


def batches(n: int, batch_size: int, epochs: int, seed: int):
  """The shared data order: a list of index arrays per epoch."""
  rng = np.random.default_rng(seed)
  return [np.array_split(rng.permutation(n), max(1, n // batch_size)) for _ in range(epochs)]


def train_tensorflow(params, data, test, order, noise, lr, seed, generator):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from crossgrad.layers import BernoulliAttentionMask  # pylint: disable=g-import-not-at-top

  w = {k: tf.Variable(v) for k, v in params.items()}
  mask = BernoulliAttentionMask(seed=seed, generator=generator)

  def logits(x, training, u=None):
    features = tf.nn.relu(x @ w["wf"] + w["bf"])
    p = tf.sigmoid(x @ w["wa"] + w["ba"])
    masked = mask(p, features, training=training, u=u)
    return tf.reshape(masked, (-1, 64 * CHANNELS)) @ w["wo"] + w["bo"]

  def loss_of(x, y, training, u=None):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        y, logits(x, training, u)))

  @tf.function(jit_compile=True)
  def step(x, y, u):
    with tf.GradientTape() as tape:
      loss = loss_of(x, y, True, u)
    for var, grad in zip(w.values(), tape.gradient(loss, list(w.values()))):
      var.assign_sub(lr * grad)
    return loss

  @tf.function(jit_compile=True)
  def step_sampled(x, y):
    with tf.GradientTape() as tape:
      loss = loss_of(x, y, True)
    for var, grad in zip(w.values(), tape.gradient(loss, list(w.values()))):
      var.assign_sub(lr * grad)
    return loss

  @tf.function(jit_compile=True)
  def evaluate(x, y):
    out = logits(x, False)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, out))
    return loss, tf.reduce_mean(tf.cast(tf.argmax(out, -1, output_type=tf.int32) == y,
                                        tf.float32))

  return _run(data, test, order, noise,
              lambda x, y, u: step(x, y, u) if u is not None else step_sampled(x, y),
              lambda x, y: evaluate(x, y), lambda v: float(np.asarray(v)))


def train_jax(params, data, test, order, noise, lr, seed, generator):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top

  state = {"w": {k: jnp.asarray(v) for k, v in params.items()}, "step": 0}
  base_key = jax.random.key(seed)

  def logits(w, x, training, key=None, u=None):
    features = jax.nn.relu(x @ w["wf"] + w["bf"])
    p = jax.nn.sigmoid(x @ w["wa"] + w["ba"])
    if not training:  # The expectation; in training the given noise, or noise from key.
      masked = p * features
    elif u is not None:
      masked = cg.jax.bernoulli_mask(p, features, u)
    else:
      masked = cg.jax.bernoulli_mask_sampled(p, features, key)
    return masked.reshape(-1, 64 * CHANNELS) @ w["wo"] + w["bo"]

  def loss_of(w, x, y, training, key=None, u=None):
    log_probs = jax.nn.log_softmax(logits(w, x, training, key, u))
    return -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=1))

  @jax.jit
  def step(w, x, y, key, u):
    loss, grads = jax.value_and_grad(loss_of)(w, x, y, True, key, u)
    return jax.tree.map(lambda a, b: a - lr * b, w, grads), loss

  @jax.jit
  def evaluate(w, x, y):
    out = logits(w, x, False)
    log_probs = jax.nn.log_softmax(out)
    loss = -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=1))
    return loss, jnp.mean((jnp.argmax(out, -1) == y).astype(jnp.float32))

  def train_step(x, y, u):
    if generator == "threefry":  # The raw key the Keras layer's step uses.
      key = jax.random.wrap_key_data(jnp.array([seed, state["step"]], jnp.uint32))
    else:
      key = jax.random.fold_in(base_key, state["step"])
    state["w"], loss = step(state["w"], x, y, key, u)
    state["step"] += 1
    return loss

  return _run(data, test, order, noise, train_step,
              lambda x, y: evaluate(state["w"], x, y), lambda v: float(np.asarray(v)))


def _run(data, test, order, noise, train_step, evaluate, to_float):
  (x, y), (x_test, y_test) = data, test
  curves = {"train_loss": [], "test_loss": [], "test_accuracy": []}
  for epoch, epoch_batches in enumerate(order):
    losses = []
    for i, idx in enumerate(epoch_batches):
      u = noise[epoch][i] if noise is not None else None
      losses.append(to_float(train_step(x[idx], y[idx].astype(np.int32), u)))
    loss, accuracy = evaluate(x_test, y_test.astype(np.int32))
    curves["train_loss"].append(float(np.mean(losses)))
    curves["test_loss"].append(to_float(loss))
    curves["test_accuracy"].append(to_float(accuracy))
  return curves


def plot(curves: dict[str, dict[str, list[float]]], path: str):
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
  for name, style in (("tensorflow", "-"), ("jax", "--")):
    c = curves[name]
    epochs = np.arange(1, len(c["train_loss"]) + 1)
    ax_loss.plot(epochs, c["train_loss"], style, label=f"{name} train")
    ax_loss.plot(epochs, c["test_loss"], style, label=f"{name} test")
    ax_acc.plot(epochs, c["test_accuracy"], style, label=f"{name} test")
  ax_loss.set(xlabel="epoch", ylabel="cross-entropy", title="loss")
  ax_acc.set(xlabel="epoch", ylabel="accuracy", title="test accuracy (expectation p * F)")
  for ax in (ax_loss, ax_acc):
    ax.legend()
    ax.grid(alpha=0.3)
  fig.tight_layout()
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  fig.savefig(path, dpi=100)
  plt.close(fig)


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_integer("epochs", 30, "Passes over the training set.")
  flags.DEFINE_bool("short", False, "2 epochs on 400 images.")
  flags.DEFINE_enum("noise", "shared", NOISE, "Where the masks' uniform noise comes from.")
  flags.DEFINE_float("lr", 0.5, "SGD learning rate.")
  flags.DEFINE_integer("batch_size", 64, "Images per batch.")
  flags.DEFINE_integer("seed", 0, "Seed of the weights, split, batches and noise.")
  flags.DEFINE_string("out", os.path.join("out", "attention_digits.png"), "The PNG's path.")


def run(epochs: int = 30, short: bool = False, noise: str = "shared", lr: float = 0.5,
        batch_size: int = 64, seed: int = 0,
        out: str = os.path.join("out", "attention_digits.png")) -> dict:
  """Trains in both frameworks, prints the curves, plots them to ``out``; returns them."""
  if noise not in NOISE:
    raise ValueError(f"noise must be one of {NOISE}, got {noise!r}")
  epochs = 2 if short else epochs
  data, test = load_data(seed, 400 if short else None)
  params = init_params(seed)
  order = batches(len(data[1]), batch_size, epochs, seed)
  uniforms = None
  if noise == "shared":
    rng = np.random.default_rng([seed, 1])
    uniforms = [[rng.uniform(size=(len(idx), 64, 1)).astype(np.float32) for idx in e]
             for e in order]
  generator = "threefry" if noise == "threefry" else "philox"
  curves = {name: train(params, data, test, order, uniforms, lr, seed, generator)
            for name, train in (("tensorflow", train_tensorflow), ("jax", train_jax))}
  print(f"{'epoch':>5}  {'tf train':>9}  {'jax train':>9}  {'tf test':>8}  {'jax test':>8}"
        f"  {'tf acc':>6}  {'jax acc':>7}")
  tf_c, jax_c = curves["tensorflow"], curves["jax"]
  for e in range(epochs):
    print(f"{e + 1:>5}  {tf_c['train_loss'][e]:9.4f}  {jax_c['train_loss'][e]:9.4f}  "
          f"{tf_c['test_loss'][e]:8.4f}  {jax_c['test_loss'][e]:8.4f}  "
          f"{tf_c['test_accuracy'][e]:6.3f}  {jax_c['test_accuracy'][e]:7.3f}")
  gap = max(abs(a - b) for k in tf_c for a, b in zip(tf_c[k], jax_c[k]))
  print(f"noise={noise}: largest TF-JAX difference over all curves {gap:.2e}")
  plot(curves, out)
  print(f"saved {out}")
  return curves


def main(argv):
  del argv  # Unused.
  run(FLAGS.epochs, FLAGS.short, FLAGS.noise, FLAGS.lr, FLAGS.batch_size, FLAGS.seed, FLAGS.out)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
