"""Bring your own kernels: one op defined in xp, a Pallas kernel pair (JAX) and a Triton
kernel pair (PyTorch) registered against it, and the cross-check of both.

    python -m crossgrad.examples.kernels

Without a GPU, Pallas runs with ``interpret=True`` and Triton under ``TRITON_INTERPRET=1``
(set here before triton is imported): the check runs on CPU, slowly. With a GPU both
compile for it, and the check runs on the GPU. docs/kernels.md explains what a kernel must do and how it is checked.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np

import crossgrad as cg

OP = "example.leaky"
BLOCK = 128


def _forward(xp, x, *, slope=0.1):
  return xp.where(x > 0, x, slope * x), (x,)


def _backward(xp, residuals, g, *, slope=0.1):
  (x,) = residuals
  return (xp.where(x > 0, g, slope * g),)


def _sample(rng):
  z = rng.standard_normal((3, 100))  # 300 elements: two full blocks and a masked tail.
  return (z + 0.1 * np.sign(z),)


LEAKY = cg.register(cg.OpDef(OP, _forward, _backward, sample=_sample,
                             doc="where(x > 0, x, slope * x), with hand-written kernels"))


def interpret_pallas() -> bool:
  """Whether Pallas must interpret: the device JAX runs on now (`jax.default_device`, as
  the cross-check sets it per device, else the default backend) is a CPU."""
  import jax  # pylint: disable=g-import-not-at-top
  device = jax.config.jax_default_device
  platform = getattr(device, "platform", device) or jax.default_backend()
  return platform == "cpu"


def pallas_leaky():
  """The op as Pallas kernels (forward and backward) under `jax.custom_vjp`."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from jax.experimental import pallas as pl  # pylint: disable=g-import-not-at-top

  def body(x_ref, g_ref, o_ref, *, slope):
    x = x_ref[...]
    o_ref[...] = jnp.where(x > 0, g_ref[...], slope * g_ref[...])

  def launch(x, g, slope):
    n = x.size
    padded = -(-n // BLOCK) * BLOCK  # The tail block is padded, its padding dropped.
    flat = [jnp.pad(a.reshape(-1), (0, padded - n)) for a in (x, g)]
    spec = pl.BlockSpec((BLOCK,), lambda i: (i,))
    out = pl.pallas_call(functools.partial(body, slope=slope),
                         out_shape=jax.ShapeDtypeStruct((padded,), x.dtype),
                         grid=(padded // BLOCK,), in_specs=[spec, spec], out_specs=spec,
                         interpret=interpret_pallas())(*flat)
    return out[:n].reshape(x.shape)

  @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
  def leaky(x, slope):
    return launch(x, x, slope)  # The forward is the backward's formula with g = x.

  leaky.defvjp(lambda x, slope: (launch(x, x, slope), x),
               lambda slope, x, g: (launch(x, g, slope),))
  return lambda x, *, slope=0.1: leaky(x, slope)


def triton_leaky():
  """The op as Triton kernels (forward and backward) under a `torch.autograd.Function`."""
  import torch  # pylint: disable=g-import-not-at-top
  if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Read when triton is imported.
  import triton  # pylint: disable=g-import-not-at-top
  import triton.language as tl  # pylint: disable=g-import-not-at-top

  @triton.jit
  def body(x_ptr, g_ptr, o_ptr, n, slope, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n  # The tail block's lanes past the end do nothing.
    x = tl.load(x_ptr + offsets, mask=mask)
    g = tl.load(g_ptr + offsets, mask=mask)
    tl.store(o_ptr + offsets, tl.where(x > 0, g, slope * g), mask=mask)

  def launch(x, g, slope):
    x, g = x.contiguous(), g.contiguous()
    out = torch.empty_like(x)
    body[(triton.cdiv(x.numel(), BLOCK),)](x, g, out, x.numel(), slope, BLOCK_SIZE=BLOCK)
    return out

  return autograd_function(launch)


def autograd_function(launch):
  """The op as a `torch.autograd.Function` whose forward is ``launch(x, x, slope)`` and
  whose backward is ``launch(x, g, slope)``."""
  import torch  # pylint: disable=g-import-not-at-top

  class Leaky(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, slope):
      ctx.save_for_backward(x)
      ctx.slope = slope
      return launch(x, x, slope)

    @staticmethod
    def backward(ctx, g):
      (x,) = ctx.saved_tensors
      return launch(x, g, ctx.slope), None

  return lambda x, *, slope=0.1: Leaky.apply(x, slope)


def register_kernels() -> list[str]:
  """Registers the Pallas kernel, and the Triton one where triton is installed; returns
  the backends that got one."""
  cg.register_kernel(OP, "jax", pallas_leaky(), name="pallas", unsupported_modes={
      "jvp": "a jax.custom_vjp has no forward mode",
      "second_order": "its backward is a Pallas kernel, which JAX does not differentiate"})
  try:
    triton_kernel = triton_leaky()
  except ImportError:
    return ["jax"]
  cg.register_kernel(OP, "torch", triton_kernel, name="triton",
                     unsupported_modes=triton_unsupported())
  return ["jax", "torch"]


def triton_unsupported() -> dict[str, str]:
  """What the Triton kernel's `torch.autograd.Function` cannot run, and why."""
  unsupported = {"vmap": "its autograd.Function has no vmap rule",
                 "batched_vjp": "its autograd.Function's forward takes ctx (no "
                                "setup_context): torch.func.vjp cannot run it",
                 "jvp": "its autograd.Function defines no jvp (forward mode)",
                 "second_order": "its backward is a Triton kernel, not differentiable"}
  if os.environ.get("TRITON_INTERPRET") == "1":
    unsupported["compile"] = "the Triton interpreter (TRITON_INTERPRET=1) runs eagerly only"
  return unsupported


def _device(backend: str) -> str:
  """The device a backend's kernel runs on: its GPU where there is one (Triton kernels run
  on CPU tensors only in the interpreter), else the CPU."""
  if backend == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    return "gpu" if jax.default_backend() == "gpu" else "cpu"
  import torch  # pylint: disable=g-import-not-at-top
  return "cuda" if torch.cuda.is_available() else "cpu"


def main() -> int:
  ok = True
  for backend in register_kernels():
    report = cg.cross_check(OP, backends=[backend], devices=_device(backend),
                            dtypes=["float32"], special=False, impls=["pallas", "triton"])
    print(report.table())
    ok = ok and report.ok
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())
