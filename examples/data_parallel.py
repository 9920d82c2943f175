r"""Data-parallel training of a 4-bit STE model over logical devices, in TensorFlow and JAX.

    h = leaky_relu(x @ ste_quantize(w1, bits=4, scale=0.25, clip=True))
    y = h @ w2;  loss = mean((y - target)^2);  plain SGD

Each framework trains the model twice from the same start: on one device with the whole
batch, and data-parallel with the batch split over ``--devices`` devices (JAX: `jax.jit`
with the batch sharded by `NamedSharding` and the weights replicated; TensorFlow: a
`tf.distribute.MirroredStrategy` step with an all-reduce of the gradients). It prints the
four loss curves and how far the sharded weights are from the single-device ones. The
batch goes to every GPU (or TPU, for JAX) there is; on a machine without accelerators the
host CPU is split into ``--devices`` logical devices:

  python -m crossgrad.examples.data_parallel --devices=4 --steps=100
"""

from __future__ import annotations

import numpy as np
from absl import flags

import crossgrad as cg
from crossgrad.backends import cpu_devices
from crossgrad.checker import usage

BATCH, FEATURES, HIDDEN = 32, 6, 8
LEARNING_RATE = 0.05
QUANTIZE = {"bits": 4, "scale": 0.25, "clip": True}


def problem(seed: int):
  """Inputs, regression targets and the initial weights (float32)."""
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
  target = np.sin(x @ rng.standard_normal((FEATURES, 1))).astype(np.float32)
  w1 = (0.5 * rng.standard_normal((FEATURES, HIDDEN))).astype(np.float32)
  w2 = (0.3 * rng.standard_normal((HIDDEN, 1))).astype(np.float32)
  return x, target, (w1, w2)


def train_jax(data, weights, steps: int, sharded: bool):
  """Loss curve, final weights and device count; the batch is split over every JAX
  device if sharded."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from jax.sharding import Mesh, NamedSharding, PartitionSpec  # pylint: disable=g-import-not-at-top
  quantize = cg.jax.get("ste_quantize", **QUANTIZE)
  leaky_relu = cg.jax.get("leaky_relu")

  def loss_fn(params, x, target):
    w1, w2 = params
    y = leaky_relu(x @ quantize(w1)) @ w2
    return jnp.mean((y - target) ** 2)

  @jax.jit
  def step(params, x, target):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, target)
    return [p - LEARNING_RATE * g for p, g in zip(params, grads)], loss

  if sharded:
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch = NamedSharding(mesh, PartitionSpec("data"))
    replicated = NamedSharding(mesh, PartitionSpec())
  else:
    batch = replicated = jax.devices()[0]
  x, target = (jax.device_put(a, batch) for a in data)
  params = [jax.device_put(w, replicated) for w in weights]
  losses = []
  for _ in range(steps):
    params, loss = step(params, x, target)
    losses.append(float(loss))
  return losses, [np.asarray(p) for p in params], len(x.sharding.device_set)


def train_tensorflow(data, weights, steps: int, sharded: bool):
  """Loss curve, final weights and replica count; the batch is split over every GPU (or
  else every logical CPU) if sharded."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  quantize = cg.tensorflow.get("ste_quantize", **QUANTIZE)
  leaky_relu = cg.tensorflow.get("leaky_relu")
  devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
  strategy = (tf.distribute.MirroredStrategy([d.name for d in devices]) if sharded
              else tf.distribute.OneDeviceStrategy(devices[0].name))
  with strategy.scope():  # Every replica applies the same all-reduced update.
    params = [tf.Variable(w, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
              for w in weights]

  def replica_step(x, target):
    with tf.GradientTape() as tape:
      y = leaky_relu(x @ quantize(params[0])) @ params[1]
      loss = tf.reduce_sum((y - target) ** 2) / BATCH  # This replica's share of the mean.
    grads = tape.gradient(loss, params)
    context = tf.distribute.get_replica_context()
    grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    for p, g in zip(params, grads):
      p.assign_sub(LEARNING_RATE * g)
    return context.all_reduce(tf.distribute.ReduceOp.SUM, loss)

  @tf.function(autograph=False)
  def step(dataset_batch):
    losses = strategy.run(replica_step, args=dataset_batch)
    return strategy.experimental_local_results(losses)[0]

  dataset = tf.data.Dataset.from_tensors(data)  # One global batch, split per replica.
  batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
  losses = [float(step(batch)) for _ in range(steps)]
  return losses, [p.numpy() for p in params], strategy.num_replicas_in_sync


def run(steps: int, seed: int = 0) -> dict[str, tuple[list[float], list[np.ndarray], int]]:
  """Loss curves, final weights and device counts of the four runs, keyed
  framework/placement."""
  data, target, weights = problem(seed)
  runs = {}
  for name, train in (("tensorflow", train_tensorflow), ("jax", train_jax)):
    for sharded in (False, True):
      runs[f"{name}/{'sharded' if sharded else 'single'}"] = train(
          (data, target), weights, steps, sharded)
  return runs


def weight_difference(a: list[np.ndarray], b: list[np.ndarray]) -> float:
  return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def main(argv):
  del argv
  cpu_devices.configure(flags.FLAGS.devices)
  runs = run(flags.FLAGS.steps, flags.FLAGS.seed)
  names = list(runs)
  print("devices: " + ", ".join(f"{n} {runs[n][2]}" for n in names))
  print(f"{'step':>5} " + " ".join(f"{n:>20}" for n in names))
  steps = len(runs[names[0]][0])
  every = max(1, steps // 10)
  for i in sorted(set(range(0, steps, every)) | {steps - 1}):
    print(f"{i + 1:5d} " + " ".join(f"{runs[n][0][i]:20.6f}" for n in names))
  for name in ("tensorflow", "jax"):
    single, sharded = runs[f"{name}/single"], runs[f"{name}/sharded"]
    print(f"{name}: max |sharded - single| weights "
          f"{weight_difference(sharded[1], single[1]):.2e}, final loss "
          f"{abs(sharded[0][-1] - single[0][-1]):.2e}")
  print(f"tensorflow vs jax (single device): max |weights| "
        f"{weight_difference(runs['tensorflow/single'][1], runs['jax/single'][1]):.2e}")


if __name__ == "__main__":
  # Flags are defined here, not on import, so tests can import `run` freely.
  flags.DEFINE_integer("steps", 100, "SGD steps in each of the four runs.")
  flags.DEFINE_integer("devices", 4, "Logical CPU devices to split the host into.")
  flags.DEFINE_integer("seed", 0, "Seed of the data and initial weights.")
  usage.run(main)
