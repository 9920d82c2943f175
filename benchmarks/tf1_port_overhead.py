r"""What a port costs: the Override post's add ported from TF1 against the same op as an OpDef.

Times one value-and-gradient of ``sum(custom_add(c, k, d) ** 2)`` for two ports of the
legacy pair (``crossgrad.tf1.port``) and for the built-in ``custom_add`` (written against
``xp``), in TF eager, TF graph (`tf.function`) and JAX jit. "ported" keeps the NumPy
forward (tf.numpy_function / jax.pure_callback, on the host); "native" has the same
forward written in TF (``framework="tensorflow"``), which JAX replays with ``xp``. Both
replay the TF grad with ``xp`` in JAX. Runs are interleaved; each figure is the median of
``--repeats`` runs, reported as a ratio against the built-in op:

  python -m crossgrad.benchmarks.tf1_port_overhead [--quick] [--size=1000] [--repeats=300]
"""

from __future__ import annotations


from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.benchmarks import timing
from crossgrad.cli import usage

FLAGS = flags.FLAGS
SIZE, REPEATS = 1000, 200


def define_flags():
  """Defines the command-line flags; done at run time so imports define none."""
  timing.define_common_flags("tf1_port_overhead")
  flags.DEFINE_integer("size", SIZE, "Elements in each input.")
  flags.DEFINE_integer("repeats", None, f"Timed runs of each variant, interleaved (default "
                       f"{REPEATS}, --quick: 5).")


def _forward(c, k, d):
  del d
  return np.add(c, k)


def _tf_forward(c, k, d):
  del d
  return c + k


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
  native = tf1.port("bench_native_add", _tf_forward, _grad, framework="tensorflow",
                    gradient="declared", register=False)
  rng = np.random.default_rng(0)
  inputs = [rng.standard_normal(size).astype(np.float32) for _ in range(3)]
  tf_inputs = [tf.constant(x) for x in inputs]
  result = {}
  for label, op in (("builtin", "custom_add"), ("ported", ported), ("native", native)):
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


def settings(quick: bool) -> dict:
  """run()'s arguments for a full or a quick run."""
  return {"size": SIZE, "repeats": 5 if quick else REPEATS}


def run(size: int = SIZE, repeats: int = REPEATS, json_path: str | None = None) -> dict:
  """Runs the benchmark, prints its table, writes JSON; returns the JSON payload."""
  import jax  # pylint: disable=g-import-not-at-top
  medians = timing.interleaved_medians(variants(size), repeats)
  print(f"value and gradient of sum(custom_add(c, k, d)**2), {size} elements, median "
        f"of {repeats} interleaved runs")
  print(f"{'mode':10s} {'built-in us':>12s} {'ported us':>10s} {'native us':>10s} "
        f"{'ported/built-in':>16s} {'native/built-in':>16s}")
  rows = []
  for mode in ("tf_eager", "tf_graph", "jax_jit"):
    builtin, ported, native = (medians[f"{mode}/{k}"] for k in ("builtin", "ported", "native"))
    rows.append({"mode": mode, "builtin_s": builtin, "ported_s": ported, "native_s": native,
                 "ratio": ported / builtin, "native_ratio": native / builtin})
    print(f"{mode:10s} {builtin * 1e6:12.1f} {ported * 1e6:10.1f} {native * 1e6:10.1f} "
          f"{ported / builtin:16.2f} {native / builtin:16.2f}")
  report = {"size": size, "repeats": repeats, "rows": rows,
            "environment": {**timing.environment(),
                            "jax_devices": [str(d) for d in jax.devices()]}}
  if json_path:
    timing.write_json(json_path, report)
  return report


def main(argv):
  del argv  # Unused.
  kwargs = settings(FLAGS.quick)
  kwargs.update({k: v for k, v in (("size", FLAGS.size), ("repeats", FLAGS.repeats)) if v})
  run(json_path=FLAGS.json, **kwargs)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
