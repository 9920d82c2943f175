r"""What a port costs: the seeds' add ported from TF1 against the same op as an OpDef.

Times one value-and-gradient of ``sum(custom_add(c, k, d) ** 2)`` for the ported op
(``crossgrad.tf1.port``: NumPy forward via tf.numpy_function / jax.pure_callback, TF grad
via jax2tf.call_tf) and for the built-in ``custom_add`` (written against ``xp``), in TF
eager, TF graph (`tf.function`) and JAX jit. Runs are interleaved; each figure is the
median of ``--repeats`` runs, reported as a ratio against the built-in op:

  python -m crossgrad.benchmarks.tf1_port_overhead --size=1000 --repeats=300
"""

from __future__ import annotations

import json
import os
import platform
import time

import numpy as np
from absl import app
from absl import flags

import crossgrad as cg

FLAGS = flags.FLAGS


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  flags.DEFINE_integer("size", 1000, "Elements in each input.")
  flags.DEFINE_integer("repeats", 200, "Timed runs of each variant (interleaved).")
  flags.DEFINE_string("json", "out/tf1_port_overhead.json", "Where to write the JSON.")


def _forward(c, k, d):
  del d
  return np.add(c, k)


def _grad(op, grad):
  c, k, d = op.inputs
  e = c + k
  return (e + d) * grad, d * grad, e * grad


def variants(size: int) -> dict[str, object]:
  """name -> zero-argument callable that blocks until its result is ready."""
  import jax  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from crossgrad import tf1  # pylint: disable=g-import-not-at-top
  ported = tf1.port("bench_ported_add", _forward, _grad, gradient="declared", register=False)
  rng = np.random.default_rng(0)
  inputs = [rng.standard_normal(size).astype(np.float32) for _ in range(3)]
  tf_inputs = [tf.constant(x) for x in inputs]
  result = {}
  for label, op in (("builtin", "custom_add"), ("ported", ported)):
    tf_op, jax_op = cg.tensorflow.get(op), cg.jax.get(op)

    def tf_step(c, k, d, tf_op=tf_op):
      with tf.GradientTape() as tape:
        tape.watch([c, k, d])
        loss = tf.reduce_sum(tf_op(c, k, d) ** 2)
      return loss, tape.gradient(loss, [c, k, d])

    graph_step = tf.function(tf_step, autograph=False)
    jax_step = jax.jit(jax.value_and_grad(lambda c, k, d, f=jax_op: (f(c, k, d) ** 2).sum(),
                                          argnums=(0, 1, 2)))
    result[f"tf_eager/{label}"] = lambda s=tf_step: s(*tf_inputs)[0].numpy()
    result[f"tf_graph/{label}"] = lambda s=graph_step: s(*tf_inputs)[0].numpy()
    result[f"jax_jit/{label}"] = lambda s=jax_step: jax.block_until_ready(s(*inputs))
  return result


def measure(size: int, repeats: int) -> dict[str, float]:
  """Median seconds per variant, runs interleaved (after one warm-up call each)."""
  runs = variants(size)
  times = {name: [] for name in runs}
  for fn in runs.values():
    fn()
  for _ in range(repeats):
    for name, fn in runs.items():
      start = time.perf_counter()
      fn()
      times[name].append(time.perf_counter() - start)
  return {name: float(np.median(t)) for name, t in times.items()}


def main(argv):
  del argv
  import jax  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  medians = measure(FLAGS.size, FLAGS.repeats)
  print(f"value and gradient of sum(custom_add(c, k, d)**2), {FLAGS.size} elements, median "
        f"of {FLAGS.repeats} interleaved runs")
  print(f"{'mode':10s} {'built-in us':>12s} {'ported us':>10s} {'ported/built-in':>16s}")
  rows = []
  for mode in ("tf_eager", "tf_graph", "jax_jit"):
    builtin, ported = medians[f"{mode}/builtin"], medians[f"{mode}/ported"]
    rows.append({"mode": mode, "builtin_s": builtin, "ported_s": ported,
                 "ratio": ported / builtin})
    print(f"{mode:10s} {builtin * 1e6:12.1f} {ported * 1e6:10.1f} {ported / builtin:16.2f}")
  report = {"size": FLAGS.size, "repeats": FLAGS.repeats, "rows": rows,
            "environment": {"python": platform.python_version(), "platform": platform.platform(),
                            "numpy": np.__version__, "tensorflow": tf.__version__,
                            "jax": jax.__version__, "jax_devices": [str(d) for d in jax.devices()]}}
  os.makedirs(os.path.dirname(FLAGS.json) or ".", exist_ok=True)
  with open(FLAGS.json, "w") as f:
    json.dump(report, f, indent=2)


if __name__ == "__main__":
  define_flags()
  app.run(main)
