r"""sparse_cnn's py_func square and cube, in their TF1 form and ported to TF2 and JAX.

The TF1 graph is sparse_cnn's with its random-name helper replaced by
`crossgrad.tf1.py_func`; it prints sparse_cnn's results ``[2, 4, 6, 8]`` and
``[3, 12, 27, 48]``. The ports (`crossgrad.tf1.port`) give the same gradients in TF2
and JAX and pass the cross-check. The cube's gradient is itself a py_func, so its JAX
backward is a host callback into TF. sparse_cnn's ``_MyCubeGrad`` returns
``3 x**2`` without multiplying by the upstream ``grad``: right only under
``reduce_sum``; the port multiplies (the cross-check's finite differences catch the
seed's version, see tests/test_tf1.py).

  python -m crossgrad.examples.tf1_square_cube
"""

from __future__ import annotations

import numpy as np
from absl import flags

import crossgrad as cg
from crossgrad import tf1
from crossgrad.cli import usage

X = np.array([1.0, 2.0, 3.0, 4.0], np.float32)  # sparse_cnn's x.

FLAGS = flags.FLAGS


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_bool("short", False, "Cross-check float32 only.")


def _my_square_grad(op, grad):
  x = op.inputs[0]
  return grad * 2 * x


def _my_cube_grad(op, grad):
  name = "MyCubeGrad"
  x = op.inputs[0]
  cube_x_grad = tf1.py_func(lambda a: np.power(a, 2) * 3, [x], [x.dtype], name=name)
  return cube_x_grad[0] * grad  # The seed returns cube_x_grad[0] alone.


def _cube(a):
  return np.power(a, 3)


def _sample(rng):
  return (rng.standard_normal((4,)) + 2.0,)


SQUARE = tf1.port("tf1_square", np.square, _my_square_grad, input_names=("x",),
                  sample=_sample, doc="sparse_cnn's py_func square, ported from TF1")
CUBE = tf1.port("tf1_cube", _cube, _my_cube_grad, sample=_sample,
                doc="sparse_cnn's py_func cube (a py_func gradient), ported from TF1")


def tf1_gradients() -> dict[str, np.ndarray]:
  """sparse_cnn's two graphs: dL/dx of L = sum(mysquare(x)) and of sum(my_cube(x))."""
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top

  def mysquare(x, name=None):
    with tf.name_scope(name, "Mysquare", [x]) as name:
      return tf1.py_func(np.square, [x], [tf.float32], name=name, grad=_my_square_grad)[0]

  def my_cube(x, name=None):
    with tf.name_scope(name, "MyCube", [x]) as name:
      return tf1.py_func(_cube, [x], [tf.float32], name=name, grad=_my_cube_grad)[0]

  results = {}
  for label, fn in (("square", mysquare), ("cube", my_cube)):
    graph = tf.Graph()
    with graph.as_default():
      x = tf.Variable(tf.constant(X, dtype=tf.float32))
      loss = tf.reduce_sum(fn(x))
      d_loss = tf.gradients(loss, [x])
      init = tf.global_variables_initializer()
    session = tf.Session(graph=graph)
    try:
      session.run(init)
      results[label] = session.run(d_loss)[0]
    finally:
      session.close()
  return results


def port_gradients() -> dict[str, dict[str, np.ndarray]]:
  """dL/dx of the ported ops in TF2 (GradientTape) and JAX (jit of grad)."""
  import jax  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  results = {}
  for label, op in (("square", SQUARE), ("cube", CUBE)):
    x = tf.constant(X)
    with tf.GradientTape() as tape:
      tape.watch(x)
      loss = tf.reduce_sum(cg.tensorflow.get(op)(x))
    jax_grad = jax.jit(jax.grad(lambda v, op=op: cg.jax.get(op)(v).sum()))(X)
    results[label] = {"tf2": tape.gradient(loss, x).numpy(), "jax": np.asarray(jax_grad)}
  return results


def run(short: bool = False):
  """(TF1 gradients, ported gradients, cross-check report)."""
  report = cg.cross_check([SQUARE, CUBE],
                          dtypes=("float32",) if short else ("float32", "float64"))
  return tf1_gradients(), port_gradients(), report


def main(argv):
  del argv
  legacy, ported, report = run(FLAGS.short)
  for label in ("square", "cube"):
    print(f"{label}: TF1 {legacy[label]}  TF2 {ported[label]['tf2']}  "
          f"JAX {ported[label]['jax']}")
  print(report.table())


if __name__ == "__main__":
  define_flags()
  usage.run(main)
