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

With ``--processes=P`` it instead trains the model with a Bernoulli mask on its hidden
units (`data_parallel_processes`) in P local processes per framework, which it launches
itself (`crossgrad.distributed.launch`): `jax.distributed`, TensorFlow's
`MultiWorkerMirroredStrategy` and PyTorch's `DistributedDataParallel`. Each framework's
final weights are compared with its single-process run of the same steps, and the
processes' mask rows with the single-process masks (bitwise):

  python -m crossgrad.examples.data_parallel --processes=2 --steps=20 --json=dp.json
"""

from __future__ import annotations

import json
import sys

import numpy as np
from absl import flags

import crossgrad as cg
from crossgrad.backends.common import cpu_devices
from crossgrad.cli import usage
from crossgrad.distributed import launch
from crossgrad.examples import data_parallel_processes as processes

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


def _problem(seed: int):
  return problem(seed), seed, LEARNING_RATE, BATCH


def _worker_command(framework: str, process_id: int, count: int, ports, steps: int,
                    seed: int) -> list[str]:
  return [sys.executable, "-m", "crossgrad.examples.data_parallel", f"--worker={framework}",
          f"--process_id={process_id}", f"--processes={count}",
          f"--ports={','.join(map(str, ports))}", f"--steps={steps}", f"--seed={seed}"]


def run_processes(count: int, steps: int, seed: int = 0, frameworks=processes.FRAMEWORKS,
                  timeout: float = 300, idle_timeout: float = 45, log=None) -> dict:
  """Per framework: ``count`` processes against one, as `--json` writes it, plus
  ``masks_equal`` (every process's mask rows are the single-process rows, bitwise)
  and ``processes_agree`` (all processes end with the same weights, bitwise).

  Every run (each framework's ``count`` workers and its single process) is launched at
  once, as one group: a failing process stops them all.
  """
  commands, names = [], []
  for framework in frameworks:
    ports = launch.free_ports(count)
    for size in (count, 1):
      commands += [_worker_command(framework, i, size, ports, steps, seed)
                   for i in range(size)]
      names += [f"{framework} {'worker' if size > 1 else 'single process'} {i}"
                for i in range(size)]
  stdouts = iter(launch.run(commands, names, timeout=timeout, idle_timeout=idle_timeout,
                            log=log))
  out = {}
  for framework in frameworks:
    parts = [json.loads(next(stdouts).strip().splitlines()[-1]) for _ in range(count)]
    single = json.loads(next(stdouts).strip().splitlines()[-1])
    weights = [[np.asarray(w, np.float32) for w in part["weights"]] for part in parts]
    masks = np.concatenate([np.asarray(part["masks"]) for part in parts], axis=1)
    out[framework] = {
        "processes": count,
        "max_weight_diff": weight_difference(weights[0], [np.asarray(w, np.float32)
                                                          for w in single["weights"]]),
        "final_loss": parts[0]["losses"][-1],
        "single_final_loss": single["losses"][-1],
        "masks_equal": bool(np.array_equal(masks, np.asarray(single["masks"]))),
        "processes_agree": all(weight_difference(w, weights[0]) == 0.0 for w in weights)}
  return out


def _main_processes():
  flag = flags.FLAGS
  if flag.worker:  # One process of a launched run: its part as one JSON line.
    ports = [int(p) for p in flag.ports.split(",")]
    part = processes.train(flag.worker, _problem(flag.seed), flag.steps, flag.process_id,
                           flag.processes, ports, QUANTIZE)
    print(json.dumps(part), flush=True)
    # Reported: torch's gloo teardown may abort a finished run; TF's peers may still use it.
    launch.exit_worker(0, group=f"{flag.worker}-{flag.processes}", rank=flag.process_id,
                       size=flag.processes)
  log = lambda line: print(line, file=sys.stderr, flush=True)
  try:
    results = run_processes(flag.processes, flag.steps, flag.seed,
                            flag.frameworks, flag.timeout, flag.idle_timeout, log)
  except launch.LaunchError as e:
    print(f"data_parallel: {e}", file=sys.stderr)
    return 1
  for name, r in results.items():
    print(f"{name}: {r['processes']} processes, max |multi - single| weights "
          f"{r['max_weight_diff']:.2e} after {flag.steps} steps, final loss "
          f"{r['final_loss']:.6f} (single {r['single_final_loss']:.6f}), masks bitwise "
          f"equal: {r['masks_equal']}, processes agree: {r['processes_agree']}")
  if flag.json:
    with open(flag.json, "w", encoding="utf-8") as f:
      json.dump(results, f, indent=1)
  return 0


def main(argv):
  del argv
  if flags.FLAGS.processes > 1 or flags.FLAGS.worker:
    return _main_processes()
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
  flags.DEFINE_integer("steps", 20, "SGD steps in each run.")
  flags.DEFINE_integer("devices", 4, "Logical CPU devices to split the host into.")
  flags.DEFINE_integer("seed", 0, "Seed of the data, initial weights and masks.")
  flags.DEFINE_integer("processes", 1, "Local processes per framework (1: logical devices).",
                       lower_bound=1)
  flags.DEFINE_list("frameworks", list(processes.FRAMEWORKS),
                    "Frameworks to run with --processes > 1.")
  flags.DEFINE_string("json", None, "With --processes > 1: write the results here.")
  flags.DEFINE_float("timeout", 300, "Seconds a multi-process run may take in all.")
  flags.DEFINE_float("idle_timeout", 45, "Seconds a worker may print nothing (else hung).")
  flags.DEFINE_enum("worker", None, list(processes.FRAMEWORKS),
                    "Internal: run as process --process_id of a launched run.")
  flags.DEFINE_integer("process_id", 0, "Internal: this worker's index.")
  flags.DEFINE_string("ports", "", "Internal: the run's ports, comma-separated.")
  usage.run(main)
