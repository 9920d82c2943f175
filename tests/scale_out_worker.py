"""Runs every built-in op sharded over logical CPU devices; prints one JSON result line.

Run by tests/test_scale_out.py in its own process, because the device count must be
fixed before TensorFlow and JAX start. For each op and parameter set, a batch of the
op's samples (two per device) is pushed through a loss ``sum(cotangent * op(x))`` and
its input gradients are computed single-device (the baseline), under `jax.jit` with
`NamedSharding`, inside `shard_map`, and in a `tf.distribute.MirroredStrategy` step;
every result is compared with the baseline and with the NumPy reference VJP.

  python tests/scale_out_worker.py [--devices=4] [--planted]
"""

import json
import sys

from absl import app
from absl import flags
import numpy as np

from crossgrad.backends.common import cpu_devices

# A script, never imported: its flags are defined and parsed before TensorFlow and JAX
# start, since they fix their device count then (app.run parses the same argv again).
_DEVICES = flags.DEFINE_integer("devices", 4, "Logical CPU devices to split the host into.")
_PLANTED = flags.DEFINE_bool("planted", False,
                             "Also run an op with a wrong backward (must be caught).")
flags.FLAGS(sys.argv)
cpu_devices.configure(_DEVICES.value)

# pylint: disable=g-import-not-at-top,wrong-import-position
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import tensorflow as tf

import crossgrad as cg
from crossgrad.checker import engine
from crossgrad.checker.rows import setting
from crossgrad.registry import validation
from crossgrad.registry.ops import BUILTIN
import op_batches
# pylint: enable=g-import-not-at-top,wrong-import-position

N = _DEVICES.value  # Logical CPUs; accelerators, if any, are left out.
PER_DEVICE = 2
STRATEGY = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(N)])
shard_map = getattr(jax, "shard_map", None)
if shard_map is None:  # Older JAX.
  from jax.experimental.shard_map import shard_map  # pylint: disable=g-import-not-at-top


def _jax_loss(op, params, batched):
  """``loss(diff_inputs, all_inputs, cotangents)``; vmapped over the batch if ``batched``."""
  fn = cg.jax.get(op, **params)
  if batched:
    fn = jax.vmap(fn)

  def loss(diff_args, all_args, cots):
    args = list(all_args)
    for i, x in zip(op.diff_argnums, diff_args):
      args[i] = x
    outs = validation.as_tuple(fn(*args))
    return sum(jnp.sum(o * c) for o, c in zip(outs, cots) if c is not None)

  return loss


def _split(op, args):
  return [args[i] for i in op.diff_argnums], list(args)


def _jax_results(op, params, stacked, cots):
  """Gradients of the batched loss per JAX placement, as NumPy arrays."""
  devices = jax.devices("cpu")
  mesh = Mesh(np.array(devices), ("data",))
  grad = jax.grad(_jax_loss(op, params, batched=True))
  results = {}

  one = devices[0]
  put = lambda xs: [None if x is None else jax.device_put(x, one) for x in xs]
  results["jax_single_device"] = jax.jit(grad)(*_split(op, put(stacked)), put(cots))

  by_batch = NamedSharding(mesh, P("data"))
  put = lambda xs: [None if x is None else jax.device_put(x, by_batch) for x in xs]
  sharded = jax.jit(grad)(*_split(op, put(stacked)), put(cots))
  results["jax_named_sharding"] = sharded

  def local(diff_args, all_args, cots):
    grads = grad(diff_args, all_args, cots)
    totals = [jax.lax.psum(jnp.sum(g, axis=0), "data") for g in grads]
    return grads, totals

  mapped = jax.jit(shard_map(local, mesh=mesh, in_specs=(P("data"), P("data"), P("data")),
                             out_specs=(P("data"), P())))
  grads, totals = mapped(*_split(op, stacked), cots)
  results["jax_shard_map"] = grads
  results["jax_shard_map_psum"] = [t[None] for t in totals]
  spread = {len(g.sharding.device_set) for g in sharded}
  return {k: [np.asarray(g) for g in v] for k, v in results.items()}, spread


def _jax_unbatched(op, params, example, cots):
  """One example's inputs sharded along their first axis divisible by the device count."""
  mesh = Mesh(np.array(jax.devices("cpu")), ("data",))
  grad = jax.jit(jax.grad(_jax_loss(op, params, batched=False)))

  def spec(x):
    axis = next((a for a, n in enumerate(np.shape(x)) if n % N == 0), None)
    return P() if axis is None else P(*([None] * axis + ["data"]))

  cot = [None if c is None else c[0] for c in cots]
  single = grad(*_split(op, example), cot)
  put = lambda xs: [None if x is None else jax.device_put(x, NamedSharding(mesh, spec(x)))
                    for x in xs]
  sharded = grad(*_split(op, put(example)), put(cot))
  return [np.asarray(g) for g in single], [np.asarray(g) for g in sharded]


def _tf_results(op, params, examples, cots, jit):
  """Per-replica gradients and their all-reduced sum in a MirroredStrategy step."""
  fn = cg.tensorflow.get(op, **params)

  def block_grads(inputs, block_cots):
    grads = [example_grads([x[b] for x in inputs],
                           [None if c is None else c[b] for c in block_cots])
             for b in range(PER_DEVICE)]
    return [tf.stack(gs) for gs in zip(*grads)]

  def example_grads(args, cot):
    with tf.GradientTape() as tape:
      diff = [args[i] for i in op.diff_argnums]
      for x in diff:
        tape.watch(x)
      outs = validation.as_tuple(fn(*args))
      loss = tf.add_n([tf.reduce_sum(o * c) for o, c in zip(outs, cot) if c is not None])
    return tape.gradient(loss, diff)

  if jit:  # XLA compiles the replica's own work; the all-reduce stays outside it.
    block_grads = tf.function(block_grads, jit_compile=True, autograph=False)

  placed = set()  # Devices the replicas' gradients were placed on (seen while tracing).

  def replica_step(block):
    stacked = block_grads(*block)
    placed.add(stacked[0].device)
    context = tf.distribute.get_replica_context()
    totals = [context.all_reduce(tf.distribute.ReduceOp.SUM, tf.reduce_sum(g, axis=0))
              for g in stacked]
    return stacked, totals

  def block(ctx):
    r = ctx.replica_id_in_sync_group
    rows = slice(r * PER_DEVICE, (r + 1) * PER_DEVICE)
    inputs = [tf.constant(np.stack([ex[i] for ex in examples[rows]]))
              for i in range(len(examples[0]))]
    return inputs, [None if c is None else tf.constant(c[rows]) for c in cots]

  step = tf.function(lambda values: STRATEGY.run(replica_step, args=(values,)),
                     autograph=False)
  stacked, totals = step(STRATEGY.experimental_distribute_values_from_function(block))
  local = [STRATEGY.experimental_local_results(g) for g in stacked]
  grads = [np.concatenate([t.numpy() for t in g]) for g in local]
  total_copies = [STRATEGY.experimental_local_results(t) for t in totals]
  return grads, [np.stack([t.numpy() for t in copies]) for copies in total_copies], placed


def _errors(got, want):
  return max((engine.max_relative_error(g, w) for g, w in zip(got, want)), default=0.0)


def run_op(op, params, seed):
  """Error of every placement against the single-device baseline and the reference."""
  examples, stacked, cots = op_batches.batch(op, params, seed, N * PER_DEVICE)
  reference = op_batches.reference_grads(op, params, examples, cots)
  results, spread = _jax_results(op, params, stacked, cots)
  baseline = results["jax_single_device"]
  autodiff = op_batches.autodiff_grads(op, params, stacked, cots)
  rows = []

  def add(placement, got, devices, reduce=None):
    """``reduce`` maps a per-example gradient to what this placement returns."""
    reduce = reduce or (lambda g: g)
    want = lambda grads: None if grads is None else [reduce(g) for g in grads]
    rows.append({"placement": placement, "devices": devices,
                 "vs_single": _errors(got, want(baseline)),
                 "vs_reference": _errors(got, want(reference)),
                 "vs_autodiff": None if autodiff is None else _errors(got, want(autodiff))})

  add("jax_single_device", baseline, 1)
  add("jax_named_sharding", results["jax_named_sharding"], max(spread))
  add("jax_shard_map", results["jax_shard_map"], N)
  add("jax_shard_map_psum", results["jax_shard_map_psum"], N,
      lambda g: g.sum(axis=0)[None])
  for jit in (False, True):
    grads, totals, placed = _tf_results(op, params, examples, cots, jit)
    suffix = "_jit" if jit else ""
    add("tf_mirrored" + suffix, grads, len(placed))
    add("tf_mirrored_all_reduce" + suffix, totals, len(placed),
        lambda g: np.repeat(g.sum(axis=0)[None], N, axis=0))
  single, sharded = _jax_unbatched(op, params, examples[0], cots)
  rows.append({"placement": "jax_named_sharding_unbatched", "devices": N,
               "vs_single": _errors(sharded, single),
               "vs_reference": _errors(sharded, [r[0] for r in reference]),
               "vs_autodiff": None if autodiff is None
                              else _errors(sharded, [a[0] for a in autodiff])})
  return rows


def main(argv):
  del argv  # Unused.
  ops = list(BUILTIN) + ([op_batches.planted_op()] if _PLANTED.value else [])
  out = {"devices": {"jax": len(jax.devices("cpu")),
                     "tensorflow": len(tf.config.list_logical_devices("CPU"))},
         "ops": []}
  for op in ops:
    for index, params in enumerate(op.param_sets):
      params = op.resolve_params(params)
      entry = {"op": op.name, "params": setting.params_label(params)}
      try:
        entry["rows"] = run_op(op, params, seed=index)
      except Exception as e:  # pylint: disable=broad-except
        entry["error"] = f"{type(e).__name__}: {e}"[:2000]
      out["ops"].append(entry)
  print(json.dumps(out))
  return 0


if __name__ == "__main__":
  app.run(main)
