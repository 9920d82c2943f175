"""Batches of an op's samples and their gradients by oracles that are not the op's
backward pass under test (shared by tests/scale_out_worker.py and
tests/multi_process_worker.py and their tests).

A batch is ``count`` examples of ``op.sample``; its loss is ``sum(cotangent * op(x))``
summed over the examples, so its input gradients are per-example VJPs.
"""

import jax
import jax.numpy as jnp
import numpy as np

import crossgrad as cg
from crossgrad.registry import validation

DTYPE = "float32"


def batch(op, params, seed, count):
  """Examples (lists of inputs), the stacked batch, and stacked float cotangents."""
  rng = np.random.default_rng(seed)
  examples = []
  for _ in range(count):
    inputs = [np.asarray(x) for x in op.sample(rng)]
    examples.append([x.astype(DTYPE) if np.issubdtype(x.dtype, np.floating) else x
                     for x in inputs])
  stacked = [np.stack(xs) for xs in zip(*examples)]
  reference = cg.numpy.get(op, **params)
  outs = [validation.as_tuple(reference(*ex)) for ex in examples]
  cots = [np.stack([rng.standard_normal(o[i].shape).astype(o[i].dtype) for o in outs])
          if np.issubdtype(outs[0][i].dtype, np.floating) else None
          for i in range(len(outs[0]))]
  return examples, stacked, cots


def reference_grads(op, params, examples, cots):
  """NumPy reference VJPs, example by example, stacked like the batch."""
  per_example = []
  for b, ex in enumerate(examples):
    out, vjp_fn = cg.numpy.vjp(op, *ex, **params)
    g = tuple(None if c is None else c[b] for c in cots)
    per_example.append(vjp_fn(g if isinstance(out, tuple) else g[0]))
  return [np.stack([e[i] for e in per_example]) for i in op.diff_argnums]


def autodiff_grads(op, params, stacked, cots):
  """JAX autodiff of the forward (exact ops, exact inputs) or of the surrogate (the other
  inputs of surrogate ops): never uses the backward. None where an input has neither."""
  forward = lambda *args: op.forward(cg.jax.xp, *args, **params)[0]
  surrogate = (None if op.surrogate is None
               else lambda *args: op.surrogate(cg.jax.xp, *args, **params))
  targets = [forward if op.gradient == "exact" or i in op.exact_argnums else surrogate
             for i in op.diff_argnums]
  if any(target is None for target in targets):
    return None
  floating = [c for c in cots if c is not None]

  def grads_of(target):
    def loss(diff_args):
      args = list(stacked)
      for i, x in zip(op.diff_argnums, diff_args):
        args[i] = x
      outs = [o for o in validation.as_tuple(jax.vmap(target)(*args))
              if jnp.issubdtype(o.dtype, jnp.floating)]
      return sum(jnp.sum(o * c) for o, c in zip(outs, floating))
    return jax.grad(loss)([stacked[i] for i in op.diff_argnums])

  grads = {target: grads_of(target) for target in set(targets)}
  return [np.asarray(grads[target][k]) for k, target in enumerate(targets)]


def planted_op():
  """leaky_relu whose backward has slope 0.3 where the forward's is 0.2: consistent
  across backends and placements, yet wrong."""
  def forward(xp, x):
    return xp.where(x > 0, x, 0.2 * x), (x,)

  def backward(xp, residuals, g):
    (x,) = residuals
    return (xp.where(x > 0, g, 0.3 * g),)  # Planted: 0.3 where the slope is 0.2.

  return cg.OpDef(name="planted_leaky_relu", forward=forward, backward=backward,
                  sample=lambda rng: (rng.standard_normal((3, 4)) + 0.1,))
