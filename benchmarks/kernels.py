"""Registered kernels against the ops crossgrad emits: one training step (forward and
backward of a sum) of each, interleaved, per kernel registered for JAX or PyTorch (the
kernels example's Pallas and Triton kernels are registered first).

    python -m crossgrad.benchmarks.kernels [--quick] [--elements=1e6]

On a GPU the kernels compile for it. Without one, Pallas runs interpreted and Triton under
``TRITON_INTERPRET=1``: the ratios then measure the interpreters, not the kernels.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from absl import flags

from crossgrad.backends.common import base
from crossgrad.benchmarks import timing
from crossgrad.cli import usage
from crossgrad.examples import kernels as example
from crossgrad.registry import kernels, op_registry

BACKENDS = ("jax", "torch")


def _jax_step(fn: Callable[..., Any], x: np.ndarray) -> Callable[[], Any]:
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  step = jax.jit(jax.value_and_grad(lambda x: jnp.sum(fn(x))))
  x = jnp.asarray(x)
  return lambda: jax.block_until_ready(step(x))


def _torch_step(fn: Callable[..., Any], x: np.ndarray) -> Callable[[], Any]:
  import torch  # pylint: disable=g-import-not-at-top
  device = "cuda" if torch.cuda.is_available() else "cpu"
  x = torch.tensor(x, device=device, requires_grad=True)

  def step():
    x.grad = None
    fn(x).sum().backward()
    if device == "cuda":
      torch.cuda.synchronize()
  return step


def _platform(backend: str) -> str:
  if backend == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    return jax.default_backend()
  import torch  # pylint: disable=g-import-not-at-top
  return "cuda" if torch.cuda.is_available() else "cpu"


def run(elements: int = 1_000_000, repeats: int = 15, json_path: str | None = None,
        backends: Sequence[str] = BACKENDS) -> list[tuple]:
  """Times every kernel registered for ``backends`` against its emitted op; returns the rows
  (op, backend, kernel, platform, elements, ms emitted, ms kernel, ratio and quartiles)."""
  registered = example.register_kernels()
  x = np.random.default_rng(0).standard_normal(elements).astype(np.float32)
  rows = []
  for backend in [b for b in backends if b in registered]:
    module = base.load(backend)
    step = _jax_step if backend == "jax" else _torch_step
    for op in op_registry.names():
      for kernel in kernels.kernels(op, backend):
        candidates = {"emitted": step(module.get(op, impl="emitted"), x),
                      kernel.name: step(module.get(op, impl=kernel.name), x)}
        samples = timing.interleaved_samples(candidates, repeats)
        emitted, ours = (float(np.median(samples[k])) for k in candidates)
        q1, q3 = timing.ratio_quartiles(samples[kernel.name], samples["emitted"])
        rows.append((op, backend, kernel.name, _platform(backend), elements,
                     emitted * 1e3, ours * 1e3, ours / emitted, q1, q3))
  interpreted = any(row[3] == "cpu" for row in rows)
  timing.emit(
      "registered kernels vs emitted ops, one step (forward + backward of a sum); ratio = "
      "kernel / emitted" + ("; on CPU the kernels run in their interpreters (Pallas "
                            "interpret mode, TRITON_INTERPRET=1): this times the "
                            "interpreters" if interpreted else ""),
      ("op", "backend", "kernel", "platform", "elements", "emitted_ms", "kernel_ms", "ratio",
       "ratio_q1", "ratio_q3"), rows, json_path, {"interpreted": interpreted})
  return rows


def settings(quick: bool) -> dict[str, int]:
  return {"elements": 1000, "repeats": 5} if quick else {"elements": 1_000_000, "repeats": 15}


def define_flags():
  timing.define_common_flags("kernels")
  timing.define_ints("elements", "Elements of the input (default 1e6; --quick 1e3).")


def main(argv):
  del argv
  chosen = settings(flags.FLAGS.quick)
  if flags.FLAGS.elements:
    chosen["elements"] = flags.FLAGS.elements[0]
  run(json_path=flags.FLAGS.json, **chosen)


if __name__ == "__main__":
  define_flags()
  usage.run(main)
