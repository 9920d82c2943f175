r"""The data-parallel example's model trained by P local processes, in JAX, TF and PyTorch.

    h = bernoulli_mask(KEEP, leaky_relu(x @ ste_quantize(w1)), key=(seed, step))
    y = h @ w2;  loss = mean((y - target)^2);  plain SGD

`train` runs one process's part: process ``i`` of ``P`` holds rows ``[i*B/P, (i+1)*B/P)``
of the global batch, draws its rows of the Bernoulli mask by passing its first row's
global index as ``example_offset`` (so the masks are the single-process masks, bitwise),
and all-reduces its gradients: JAX with `jax.distributed` and a `shard_map` step with a
`psum`; TensorFlow with a `MultiWorkerMirroredStrategy`; PyTorch with
`DistributedDataParallel` over gloo. With ``P = 1`` it is the single-process run.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import crossgrad as cg
from crossgrad.distributed import frameworks

KEEP = 0.75  # The mask keeps a hidden unit with this probability.
FRAMEWORKS = ("jax", "tensorflow", "torch")


def _rows(batch: int, process_id: int, num_processes: int) -> slice:
  share = batch // num_processes
  return slice(process_id * share, (process_id + 1) * share)


def _progress(step: int, loss) -> None:
  """A line per step: the launcher reads silence as a hang."""
  print(f"step {step + 1} loss {float(loss):.6f}", flush=True)


def _result(weights, losses, masks, rows: slice) -> dict[str, Any]:
  """What a process reports: floats as Python floats (float32 values round-trip exactly)."""
  return {"rows": [rows.start, rows.stop], "losses": [float(v) for v in losses],
          "weights": [np.asarray(w, np.float32).tolist() for w in weights],
          "masks": [np.asarray(m).astype(np.int8).tolist() for m in masks]}


def _train_jax(problem, steps, process_id, num_processes, ports, settings):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # pylint: disable=g-import-not-at-top
  if num_processes > 1:
    frameworks.jax_initialize(process_id, num_processes, ports)
  (x, target, weights), seed, rate, batch = problem
  quantize = cg.jax.get("ste_quantize", **settings)
  leaky_relu = cg.jax.get("leaky_relu")
  mesh = Mesh(np.array(jax.devices()), ("data",))

  def local(params, x, target, step):
    offset = jax.lax.axis_index("data") * x.shape[0]  # This shard's first global example.
    key = jnp.stack([jnp.uint32(seed), step.astype(jnp.uint32)])
    keep = jnp.full((x.shape[0], params[0].shape[1]), KEEP, jnp.float32)

    def loss_fn(params):
      h = leaky_relu(x @ quantize(params[0]))
      h = cg.jax.bernoulli_mask_sampled(keep, h, key, example_offset=offset)
      return jnp.sum((h @ params[1] - target) ** 2) / batch

    # The parameters enter replicated (P()), so shard_map's autodiff already sums their
    # gradients over "data" (the transpose of their implicit broadcast): no psum here.
    loss, grads = jax.value_and_grad(loss_fn)(params)
    loss = jax.lax.psum(loss, "data")
    mask = cg.jax.bernoulli_mask_sampled(keep, jnp.ones_like(keep), key, example_offset=offset)
    return [p - rate * g for p, g in zip(params, grads)], loss, mask

  step = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data"), P("data"), P()),
                               out_specs=(P(), P(), P("data"))))
  rows = _rows(batch, process_id, num_processes)
  put = lambda spec, a: jax.make_array_from_process_local_data(NamedSharding(mesh, spec), a)
  x, target = put(P("data"), x[rows]), put(P("data"), target[rows])
  params = [put(P(), w) for w in weights]
  losses, masks = [], []
  for k in range(steps):
    params, loss, mask = step(params, x, target, jnp.int32(k))
    losses.append(np.asarray(loss.addressable_data(0)))
    _progress(k, losses[-1])
    masks.append(np.concatenate([np.asarray(s.data) for s in mask.addressable_shards]))
  final = [np.asarray(p.addressable_data(0)) for p in params]
  if num_processes > 1:
    jax.distributed.shutdown()
  return _result(final, losses, masks, rows)


def _train_tensorflow(problem, steps, process_id, num_processes, ports, settings):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  strategy = (frameworks.tensorflow_strategy(process_id, num_processes, ports)
              if num_processes > 1 else tf.distribute.OneDeviceStrategy("/cpu:0"))
  (x, target, weights), seed, rate, batch = problem
  quantize = cg.tensorflow.get("ste_quantize", **settings)
  leaky_relu = cg.tensorflow.get("leaky_relu")
  with strategy.scope():  # Every replica applies the same all-reduced update.
    params = [tf.Variable(w, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
              for w in weights]

  def replica_step(x, target, step):
    context = tf.distribute.get_replica_context()
    offset = context.replica_id_in_sync_group * x.shape[0]  # One replica per process.
    key = tf.stack([tf.constant(seed, tf.int64), tf.cast(step, tf.int64)])
    keep = tf.fill([x.shape[0], weights[0].shape[1]], KEEP)
    with tf.GradientTape() as tape:
      h = leaky_relu(x @ quantize(params[0]))
      h = cg.tensorflow.bernoulli_mask_sampled(keep, h, key, "threefry", example_offset=offset)
      loss = tf.reduce_sum((h @ params[1] - target) ** 2) / batch
    grads = context.all_reduce(tf.distribute.ReduceOp.SUM, tape.gradient(loss, params))
    for p, g in zip(params, grads):
      p.assign_sub(rate * g)
    mask = cg.tensorflow.bernoulli_mask_sampled(keep, tf.ones_like(keep), key, "threefry",
                                                example_offset=offset)
    return context.all_reduce(tf.distribute.ReduceOp.SUM, loss), mask

  rows = _rows(batch, process_id, num_processes)
  local = lambda context: (tf.constant(x[rows]), tf.constant(target[rows]))
  data = strategy.experimental_distribute_values_from_function(local)
  step = tf.function(lambda data, k: strategy.run(replica_step, args=(*data, k)),
                     autograph=False)
  losses, masks = [], []
  for k in range(steps):
    loss, mask = step(data, tf.constant(k))
    losses.append(strategy.experimental_local_results(loss)[0].numpy())
    _progress(k, losses[-1])
    masks.append(strategy.experimental_local_results(mask)[0].numpy())
  return _result([p.numpy() for p in params], losses, masks, rows)


def _train_torch(problem, steps, process_id, num_processes, ports, settings):
  import torch  # pylint: disable=g-import-not-at-top
  import torch.distributed as dist  # pylint: disable=g-import-not-at-top
  if num_processes > 1:
    frameworks.torch_initialize(process_id, num_processes, ports)
  (x, target, weights), seed, rate, batch = problem
  rows = _rows(batch, process_id, num_processes)
  # DDP averages the processes' gradients, so each process's loss is scaled by P.
  model = _torch_model(weights, settings, batch / num_processes, rows.start)
  run = torch.nn.parallel.DistributedDataParallel(model) if num_processes > 1 else model
  x, target = torch.as_tensor(x[rows]), torch.as_tensor(target[rows])
  losses, masks = [], []
  for k in range(steps):
    loss, mask = run(x, target, torch.tensor([seed, k]))
    loss.backward()
    with torch.no_grad():
      for p in model.parameters():
        p -= rate * p.grad
        p.grad = None
      if num_processes > 1:
        dist.all_reduce(loss)
    losses.append(loss.detach().numpy() / num_processes)
    _progress(k, losses[-1])
    masks.append(mask.numpy())
  final = [p.detach().numpy() for p in model.parameters()]
  if num_processes > 1:
    dist.destroy_process_group()
  return _result(final, losses, masks, rows)


def _torch_model(weights, settings, loss_scale, offset):
  """The two weights as a module; ``forward`` gives this process's scaled loss and mask."""
  import torch  # pylint: disable=g-import-not-at-top

  class Model(torch.nn.Module):
    """``forward(x, target, key)``: the loss of these rows and their mask."""

    def __init__(self):
      super().__init__()
      self.w1, self.w2 = (torch.nn.Parameter(torch.as_tensor(w)) for w in weights)
      self.quantize = cg.torch.get("ste_quantize", **settings)
      self.leaky_relu = cg.torch.get("leaky_relu")

    def forward(self, x, target, key):
      keep = torch.full((x.shape[0], self.w1.shape[1]), KEEP)
      h = self.leaky_relu(x @ self.quantize(self.w1))
      h = cg.torch.bernoulli_mask_sampled(keep, h, key, example_offset=offset)
      loss = torch.sum((h @ self.w2 - target) ** 2) / loss_scale
      mask = cg.torch.bernoulli_mask_sampled(keep, torch.ones_like(keep), key,
                                             example_offset=offset)
      return loss, mask.detach()

  return Model()


TRAIN = {"jax": _train_jax, "tensorflow": _train_tensorflow, "torch": _train_torch}


def train(framework: str, problem, steps: int, process_id: int = 0, num_processes: int = 1,
          ports: Sequence[int] = (), settings: dict | None = None) -> dict[str, Any]:
  """One process's run: its rows, loss curve (global), final weights and mask rows per step.

  ``problem`` is ``((x, target, weights), mask_seed, learning_rate, batch)``.
  """
  return TRAIN[framework](problem, steps, process_id, num_processes, ports, settings or {})
