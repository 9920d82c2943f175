r"""The Override-post's simple network kept in TF1 form, and its custom add ported to TF2 and JAX.

The TF1 program is the post's, with one change: its random-name ``py_func`` helper is
`crossgrad.tf1.py_func`. It trains with `tf.compat.v1.train.AdamOptimizer` in a
session; at every step the ported op (`crossgrad.tf1.port`) gives the gradients of the
same loss at the same ``c, k`` in TF2 (`tf.GradientTape`) and JAX (`jax.grad`), and
the table shows they are the TF1 gradients:

  python -m crossgrad.examples.tf1_simple_network --steps=50
  python -m crossgrad.check --module=crossgrad.examples.tf1_simple_network --ops=tf1_custom_add
"""

from __future__ import annotations

import functools

import numpy as np
from absl import flags

import crossgrad as cg
from crossgrad import tf1
from crossgrad.cli import usage

DATA = np.array([1.0, 2.0], np.float32)
LABELS = np.array([0, 1], np.int32)  # The seed feeds them as one-hot labels.
LEARNING_RATE, BETA1, BETA2, EPSILON = 1e-3, 0.9, 0.999, 0.1

FLAGS = flags.FLAGS


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_integer("steps", 50, "Adam steps of the TF1 program.")
  flags.DEFINE_integer("seed", 0, "Seed of the initial values.")


# The post's legacy pair, unchanged.
def forward_func(c, k, d):
  e = np.add(c, k)
  return e.astype(np.float32)


def backprop_func(op, grad):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  c = op.inputs[0]
  k = op.inputs[1]
  d = op.inputs[2]
  e = tf.add(c, k)
  return (e + d) * grad, d * grad, e * grad


TF1_CUSTOM_ADD = tf1.port(
    "tf1_custom_add", forward_func, backprop_func, gradient="declared",
    sample=lambda rng: tuple(rng.standard_normal((2,)) for _ in range(3)),
    doc="the Override post's py_func add with its overridden gradient, ported from TF1")


def build_tf1_program(graph, c0: np.ndarray, k0: np.ndarray):
  """The post's graph: returns (c, k, loss, grads_and_vars, train_op, feeds)."""
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top

  def custom_add(c, k, d, name=None):
    with tf.name_scope(name, "AddGrad", [c, k, d]) as name:
      return tf1.py_func(forward_func, [c, k, d], [np.float32], name=name,
                         grad=backprop_func)

  with graph.as_default():
    labels_ph = tf.placeholder(shape=(2,), dtype=tf.int32)
    data_ph = tf.placeholder(shape=(2,), dtype=tf.float32)
    c = tf.Variable(c0)
    k = tf.Variable(k0)
    d = tf.add(data_ph, c)
    e = custom_add(c, k, d)[0]
    a = tf.multiply(d, e)
    loss = tf.losses.softmax_cross_entropy(logits=a[None], onehot_labels=labels_ph[None])
    opt = tf.train.AdamOptimizer(learning_rate=LEARNING_RATE, beta1=BETA1, beta2=BETA2,
                                 epsilon=EPSILON)
    grads = opt.compute_gradients(loss, [c, k])
    train_op = opt.apply_gradients(grads_and_vars=grads)
    init = tf.global_variables_initializer()
  return c, k, loss, grads, train_op, init, {labels_ph: LABELS, data_ph: DATA}


def tf2_gradients(c: np.ndarray, k: np.ndarray) -> list[np.ndarray]:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  custom_add = cg.tensorflow.get(TF1_CUSTOM_ADD)
  c, k = tf.constant(c), tf.constant(k)
  with tf.GradientTape() as tape:
    tape.watch([c, k])
    d = DATA + c
    a = d * custom_add(c, k, d)
    loss = tf.nn.softmax_cross_entropy_with_logits(LABELS.astype(np.float32), a)
  return [g.numpy() for g in tape.gradient(loss, [c, k])]


@functools.cache
def _jax_gradient_fn():
  import jax  # pylint: disable=g-import-not-at-top
  custom_add = cg.jax.get(TF1_CUSTOM_ADD)

  def loss_fn(c, k):
    d = DATA + c
    a = d * custom_add(c, k, d)
    return -(LABELS * jax.nn.log_softmax(a)).sum()

  return jax.jit(jax.grad(loss_fn, argnums=(0, 1)))


def jax_gradients(c: np.ndarray, k: np.ndarray) -> list[np.ndarray]:
  return [np.asarray(g) for g in _jax_gradient_fn()(c, k)]


def run(steps: int, seed: int = 0) -> list[dict]:
  """Trains the TF1 program; per step its gradients and the ports' differences."""
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  c0, k0 = (np.clip(0.1 * rng.standard_normal(2), -0.2, 0.2).astype(np.float32)
            for _ in range(2))
  graph = tf.Graph()
  c, k, loss, grads, train_op, init, feeds = build_tf1_program(graph, c0, k0)
  rows = []
  # Not `with Session`: that would make the TF1 graph the default for the TF2 code too.
  session = tf.Session(graph=graph)
  try:
    session.run(init)
    for step in range(steps):
      c_value, k_value = session.run([c, k])
      loss_value, tf1_grads = session.run([loss, [g for g, _ in grads]], feeds)
      rows.append({
          "step": step, "loss": float(loss_value), "tf1": tf1_grads,
          "tf2": tf2_gradients(c_value, k_value), "jax": jax_gradients(c_value, k_value)})
      session.run(train_op, feeds)
  finally:
    session.close()
  return rows


def max_difference(row: dict, other: str) -> float:
  return max(float(np.max(np.abs(a - b))) for a, b in zip(row[other], row["tf1"]))


def main(argv):
  del argv
  rows = run(FLAGS.steps, FLAGS.seed)
  print(f"{'step':>4} {'loss':>9}  {'TF1 dL/dc':>22} {'TF1 dL/dk':>22}  "
        f"{'|TF2-TF1|':>9} {'|JAX-TF1|':>9}")
  for row in rows[::max(1, len(rows) // 10)] + rows[-1:]:
    dc, dk = (np.array2string(g, precision=5) for g in row["tf1"])
    print(f"{row['step']:4d} {row['loss']:9.6f}  {dc:>22} {dk:>22}  "
          f"{max_difference(row, 'tf2'):9.1e} {max_difference(row, 'jax'):9.1e}")
  worst = max(max(max_difference(r, "tf2"), max_difference(r, "jax")) for r in rows)
  print(f"largest gradient difference to TF1 over {len(rows)} steps: {worst:.1e}")


if __name__ == "__main__":
  define_flags()
  usage.run(main)
