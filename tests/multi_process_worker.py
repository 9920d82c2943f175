"""Gradients of crossgrad ops in a multi-process data-parallel step, one process's part.

Each op's batch (tests/op_batches.py) is split over the processes by rows; the loss is
``sum(cotangent * op(x_b + shift))`` over the examples ``b``, where ``shift`` (zeros, one
per floating differentiable input) is a weight every replica holds: its gradient is the
sum of the per-example gradients over the global batch, all-reduced across processes by
the framework (JAX: `jax.jit` over arrays sharded across `jax.distributed` processes;
TensorFlow: a `MultiWorkerMirroredStrategy` step; PyTorch: `DistributedDataParallel`
over gloo, eager and `torch.compile`). `gradients` with one process is the
single-process run over the global batch. As a script (run by `crossgrad.distributed.launch`
from tests/test_multi_process.py) it saves its rows' input gradients and the weight
gradients of every op to ``--out/<framework>_<process>.npz``:

  python tests/multi_process_worker.py --framework=jax --process_id=0 --processes=2 \
      --ports=P --ops=leaky_relu --planted --out=DIR
"""

from __future__ import annotations

import functools

import numpy as np

import crossgrad as cg
from crossgrad.distributed import frameworks, launch
from crossgrad.registry import validation

PER_PROCESS = 2  # Examples per process.
PLACEMENTS = {"jax": ("jax_processes",), "tensorflow": ("tf_multi_worker",),
              "torch": ("torch_ddp", "torch_ddp_compile")}


def _rows(count, process_id, num_processes):
  share = count // num_processes
  return slice(process_id * share, (process_id + 1) * share)


def _shifted(op, args, shifts):
  """The inputs with the zero shifts added to the floating differentiable ones."""
  args = list(args)
  for i, s in zip(op.diff_argnums, shifts):
    args[i] = args[i] + s
  return args


def _jax(op, params, stacked, cots, process_id, num_processes):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # pylint: disable=g-import-not-at-top
  fn = jax.vmap(cg.jax.get(op, **params), in_axes=0)
  mesh = Mesh(np.array(jax.devices()[:max(num_processes, 1)]), ("data",))
  rows = _rows(len(stacked[0]), process_id, num_processes)
  put = lambda spec, a: jax.make_array_from_process_local_data(NamedSharding(mesh, spec), a)

  def loss(diff, shifts, args, cots):
    args = list(args)
    for i, x in zip(op.diff_argnums, diff):
      args[i] = x
    outs = validation.as_tuple(fn(*_shifted(op, args, [s[None] for s in shifts])))
    return sum(jnp.sum(o * c) for o, c in zip(outs, cots) if c is not None)

  args = [put(P("data"), a[rows]) for a in stacked]
  local_cots = [None if c is None else put(P("data"), c[rows]) for c in cots]
  shifts = [put(P(), np.zeros_like(stacked[i][0])) for i in op.diff_argnums]
  grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
  inputs, weights = grad([args[i] for i in op.diff_argnums], shifts, args, local_cots)
  local = lambda g: np.concatenate([np.asarray(s.data) for s in g.addressable_shards])
  return {"jax_processes": ([local(g) for g in inputs],
                            [np.asarray(w.addressable_data(0)) for w in weights])}


@functools.cache
def _tf_strategy(process_id, num_processes, ports):
  """One strategy per process: TensorFlow sets up its collectives once."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if num_processes == 1:
    return tf.distribute.OneDeviceStrategy("/cpu:0")
  return frameworks.tensorflow_strategy(process_id, num_processes, ports)


def _tf(op, params, stacked, cots, process_id, num_processes, ports):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  strategy = _tf_strategy(process_id, num_processes, tuple(ports))
  fn = cg.tensorflow.get(op, **params)
  rows = _rows(len(stacked[0]), process_id, num_processes)

  def replica_step(args, cots):
    diff = [args[i] for i in op.diff_argnums]
    shifts = [tf.zeros_like(x[0]) for x in diff]
    with tf.GradientTape() as tape:
      tape.watch(diff + shifts)
      full = list(args)
      for i, x in zip(op.diff_argnums, diff):
        full[i] = x
      total = 0.0
      for b in range(rows.stop - rows.start):
        outs = validation.as_tuple(fn(*_shifted(op, [a[b] for a in full], shifts)))
        total += tf.add_n([tf.reduce_sum(o * c[b]) for o, c in zip(outs, cots)
                           if c is not None])
    inputs, weights = tape.gradient(total, [diff, shifts])
    context = tf.distribute.get_replica_context()
    return inputs, context.all_reduce(tf.distribute.ReduceOp.SUM, weights)

  local = lambda context: ([tf.constant(a[rows]) for a in stacked],
                           [None if c is None else tf.constant(c[rows]) for c in cots])
  data = strategy.experimental_distribute_values_from_function(local)
  step = tf.function(lambda data: strategy.run(replica_step, args=data), autograph=False)
  inputs, weights = step(data)
  first = lambda x: strategy.experimental_local_results(x)[0].numpy()
  return {"tf_multi_worker": ([first(g) for g in inputs], [first(w) for w in weights])}


def _torch(op, params, stacked, cots, process_id, num_processes):
  import torch  # pylint: disable=g-import-not-at-top
  fn = cg.torch.get(op, **params)
  rows = _rows(len(stacked[0]), process_id, num_processes)

  class Shifts(torch.nn.Module):
    """The zero shifts as parameters; ``forward`` is this process's loss, times P: DDP
    averages the processes' gradients."""

    def __init__(self):
      super().__init__()
      self.shifts = torch.nn.ParameterList(
          [torch.nn.Parameter(torch.zeros(stacked[i].shape[1:])) for i in op.diff_argnums])

    def forward(self, args, cots):
      total = 0.0
      for b in range(len(args[0])):
        outs = validation.as_tuple(fn(*_shifted(op, [a[b] for a in args], self.shifts)))
        total = total + sum(torch.sum(o * c[b]) for o, c in zip(outs, cots) if c is not None)
      return total * num_processes

  results = {}
  for placement in PLACEMENTS["torch"]:
    module = Shifts()
    run = (torch.nn.parallel.DistributedDataParallel(module) if num_processes > 1 else module)
    if placement.endswith("compile"):
      torch.compiler.reset()  # Each op compiles afresh: no shapes made dynamic by the last op,
      run = torch.compile(run, dynamic=False)  # no fallback to eager at a recompile limit.
    args = [torch.tensor(a[rows]) for a in stacked]
    for i in op.diff_argnums:
      args[i].requires_grad_(True)
    run(args, [None if c is None else torch.tensor(c[rows]) for c in cots]).backward()
    results[placement] = ([args[i].grad.numpy() / num_processes for i in op.diff_argnums],
                          [s.grad.numpy() for s in module.shifts])
  return results


def gradients(framework, op, params, stacked, cots, process_id=0, num_processes=1,
              ports=()):
  """Placement -> (this process's rows of the input gradients, the weight gradients)."""
  if framework == "jax":
    return _jax(op, params, stacked, cots, process_id, num_processes)
  if framework == "tensorflow":
    return _tf(op, params, stacked, cots, process_id, num_processes, ports)
  return _torch(op, params, stacked, cots, process_id, num_processes)


def _main(argv):
  del argv
  from absl import flags  # pylint: disable=g-import-not-at-top
  import op_batches  # pylint: disable=g-import-not-at-top
  from crossgrad.registry.ops import BUILTIN  # pylint: disable=g-import-not-at-top
  f = flags.FLAGS
  ports = [int(p) for p in f.ports.split(",")]
  if f.framework == "jax":
    frameworks.jax_initialize(f.process_id, f.processes, ports)
  elif f.framework == "torch":
    frameworks.torch_initialize(f.process_id, f.processes, ports)
  ops = [op for op in BUILTIN if op.name in f.ops or f.ops == ["all"]]
  ops += [op_batches.planted_op()] if f.planted else []
  saved = {}
  for op in ops:
    for index, params in enumerate(op.param_sets):
      params = op.resolve_params(params)
      _, stacked, cots = op_batches.batch(op, params, index, PER_PROCESS * f.processes)
      try:
        results = gradients(f.framework, op, params, stacked, cots, f.process_id,
                            f.processes, ports)
      except Exception as e:  # pylint: disable=broad-except  # Reported, not fatal.
        saved[f"{op.name}|{index}|error"] = np.asarray(f"{type(e).__name__}: {e}"[:2000])
        continue
      for placement, (inputs, weights) in results.items():
        for k, (g, w) in enumerate(zip(inputs, weights)):
          saved[f"{op.name}|{index}|{placement}|input|{k}"] = g
          saved[f"{op.name}|{index}|{placement}|weight|{k}"] = w
      print(f"{op.name} {index} done", flush=True)
  np.savez(f"{f.out}/{f.framework}_{f.process_id}.npz", **saved)
  # Saved: torch's gloo teardown may abort a finished run; TF's peers may still be using it.
  launch.exit_worker(0, group=f.framework, rank=f.process_id, size=f.processes)


if __name__ == "__main__":
  from absl import app, flags  # pylint: disable=g-import-not-at-top
  flags.DEFINE_enum("framework", "jax", list(PLACEMENTS), "The framework to run.")
  flags.DEFINE_integer("process_id", 0, "This process's index.")
  flags.DEFINE_integer("processes", 2, "Processes in the run.")
  flags.DEFINE_string("ports", "", "The run's ports, comma-separated.")
  flags.DEFINE_list("ops", ["all"], "Built-in ops to run ('all': every one).")
  flags.DEFINE_bool("planted", False, "Also run an op with a wrong backward.")
  flags.DEFINE_string("out", ".", "Folder for <framework>_<process>.npz.")
  app.run(_main)
