"""Kernels of one op for the kernel tests: correct ones, and ones with the bugs kernel
authors make, each planted by a ``bug`` argument (None: correct).

The op, ``kernel_test.leaky``, is ``where(x > 0, x, slope * x)`` on 15 elements: two
blocks of 8, the second a masked tail. Pallas runs in interpret mode and Triton under
``TRITON_INTERPRET=1`` without a GPU (the tests' conftest sets it before triton loads).
"""

from __future__ import annotations

import functools

import numpy as np

import crossgrad as cg
from crossgrad.examples import kernels as example

OP = "kernel_test.leaky"
BLOCK = 8
BUGS = ("forward_constant", "backward", "tail", "jit_only")


def _sample(rng):
  z = rng.standard_normal((3, 5))
  return (z + 0.1 * np.sign(z),)  # Off the kink at 0.


# The example's op, on 15 elements.
LEAKY = cg.register(cg.OpDef(OP, example.LEAKY.forward, example.LEAKY.backward, sample=_sample,
                             doc="where(x > 0, x, slope * x) (kernel tests)"))
NO_FORWARD_MODE = {"jvp": "a jax.custom_vjp kernel has no forward mode",
                   "second_order": "its backward is a Pallas kernel, not differentiable"}


def pallas_kernel(bug: str | None = None):
  """A Pallas forward and backward under `jax.custom_vjp`, blocks of ``BLOCK``."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from jax.experimental import pallas as pl  # pylint: disable=g-import-not-at-top

  def body(x_ref, *refs, slope, n, backward):
    g_ref, o_ref = refs if backward else (None, refs[0])
    x = x_ref[...]
    up = g_ref[...] if backward else x
    start = pl.program_id(0) * BLOCK
    index = start + jnp.arange(BLOCK)
    limit = n - 1 if bug == "tail" and backward else n
    slope_here = slope * 2 if (bug == "forward_constant" and not backward) or (
        bug == "backward" and backward) else slope
    o_ref[...] = jnp.where(index < limit, jnp.where(x > 0, up, slope_here * up), 0)

  def launch(arrays, slope, backward):
    n = arrays[0].size
    padded = -(-n // BLOCK) * BLOCK
    flat = [jnp.pad(a.reshape(-1), (0, padded - n)) for a in arrays]
    spec = pl.BlockSpec((BLOCK,), lambda i: (i,))
    out = pl.pallas_call(
        functools.partial(body, slope=slope, n=n, backward=backward),
        out_shape=jax.ShapeDtypeStruct((padded,), arrays[0].dtype), grid=(padded // BLOCK,),
        in_specs=[spec] * len(flat), out_specs=spec,
        interpret=example.interpret_pallas())(*flat)
    return out[:n].reshape(arrays[0].shape)

  @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
  def leaky(x, slope):
    return launch([x], slope, False)

  def fwd(x, slope):
    return launch([x], slope, False), x

  def bwd(slope, x, g):
    if bug == "jit_only" and isinstance(g, jax.core.Tracer):
      slope = slope * 2  # A "fast path" taken only while traced.
    return (launch([x, g], slope, True),)

  leaky.defvjp(fwd, bwd)
  return lambda x, *, slope=0.1: leaky(x, slope)


def triton_kernel(bug: str | None = None):
  """A Triton forward and backward under a `torch.autograd.Function`, blocks of ``BLOCK``
  (``TRITON_INTERPRET=1`` must be set before triton is imported, without a GPU)."""
  import torch  # pylint: disable=g-import-not-at-top
  import triton  # pylint: disable=g-import-not-at-top
  import triton.language as tl  # pylint: disable=g-import-not-at-top

  @triton.jit
  def body(x_ptr, g_ptr, o_ptr, n, limit, slope, BACKWARD: tl.constexpr,
           BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < limit
    x = tl.load(x_ptr + offsets, mask=mask)
    up = tl.load(g_ptr + offsets, mask=mask) if BACKWARD else x
    tl.store(o_ptr + offsets, tl.where(x > 0, up, slope * up), mask=offsets < n)

  def launch(x, g, slope, backward):
    x, g = x.contiguous(), g.contiguous()
    out = torch.zeros_like(x)  # What a masked-out element keeps.
    n = x.numel()
    limit = n - 1 if bug == "tail" and backward else n
    slope = slope * 2 if (bug == "forward_constant" and not backward) or (
        bug == "backward" and backward) else slope
    body[(triton.cdiv(n, BLOCK),)](x, g, out, n, limit, slope, BACKWARD=backward,
                                   BLOCK_SIZE=BLOCK)
    return out

  # The forward launches with g = x itself, the backward with the output's cotangent.
  return example.autograd_function(lambda x, g, slope: launch(x, g, slope, g is not x))


def tensorflow_kernel(bug: str | None = None):
  """TensorFlow's fused LeakyRelu and LeakyReluGrad under `tf.custom_gradient`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def leaky(x, *, slope=0.1):
    @tf.custom_gradient
    def fused(x):
      forward_slope = slope * 2 if bug == "forward_constant" else slope

      def grad(g):
        backward_slope = slope * 2 if bug == "backward" else slope
        return tf.raw_ops.LeakyReluGrad(gradients=g, features=x, alpha=backward_slope)
      return tf.nn.leaky_relu(x, alpha=forward_slope), grad
    return fused(x)
  return leaky



def check_triton_in_subprocess(bug: str | None, modes=None, devices="all") -> cg.Report:
  """The cross-check of the Triton kernel (``bug`` planted) as a `Report`, run in a process
  of its own: on Python 3.11 Triton's interpreter leaves the process's `ast` parser in a
  state where later parses (pytest rewriting the next test file) raise SystemError."""
  import json  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  done = subprocess.run([sys.executable, __file__, json.dumps([bug, modes, devices])],
                        capture_output=True, text=True, timeout=600, check=False,
                        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
  if done.returncode != 0:
    raise RuntimeError(done.stderr[-3000:])
  return cg.Report.from_dict(json.loads(done.stdout))


def _main(argv):
  import json  # pylint: disable=g-import-not-at-top
  bug, modes, devices = json.loads(argv[1])
  cg.register_kernel(OP, "torch", triton_kernel(bug), name="k",
                     unsupported_modes=example.triton_unsupported())
  report = cg.cross_check(OP, backends=["torch"], modes=modes, devices=devices,
                          dtypes=["float32"], special=False, impls=["k"])
  print(report.to_json())


if __name__ == "__main__":
  import sys as _sys  # pylint: disable=g-import-not-at-top
  _main(_sys.argv)
