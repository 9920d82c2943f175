"""Triton's LLVM comes before TensorFlow's (whose coming first aborts the process once
torch.compile imports Triton), though `import crossgrad` imports no Triton: in fresh
processes, each importing its frameworks in a user's order."""

import importlib.util
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                reason="Triton is not installed: nothing to order")


def _run(code):
  done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=600, check=False,
                        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
  assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
  return done.stdout.strip().splitlines()[-1]


def test_tensorflow_imported_after_crossgrad_leaves_room_for_triton():
  """TensorFlow imported by the user (not through crossgrad) after ``import crossgrad``,
  then Triton as torch.compile imports it: TensorFlow then Triton alone aborts
  ("Option ... registered more than once", SIGABRT)."""
  out = _run("import sys; import crossgrad; print('triton' in sys.modules, end=' '); "
             "import tensorflow; import triton; names = list(sys.modules); "
             "print(names.index('triton') < names.index('tensorflow'))")
  assert out == "False True"


def test_jax_then_crossgrad_then_torch_compile():
  """JAX first (crossgrad cannot reorder what is loaded), crossgrad, then torch.compile
  (its Dynamo imports Triton) of a crossgrad op, forward and backward."""
  out = _run(
      "import jax, jax.numpy as jnp; jnp.ones(2).block_until_ready(); "
      "import torch, crossgrad as cg; leaky = cg.torch.get('leaky_relu', alpha=0.25); "
      "f = torch.compile(leaky, backend='aot_eager'); "
      "x = torch.tensor([-2.0, -0.5, 1.0, 3.0], requires_grad=True); y = f(x); "
      "y.backward(torch.ones(4)); import sys; "
      "print(y.tolist(), x.grad.tolist(), 'triton' in sys.modules)")
  assert out == "[-0.5, -0.125, 1.0, 3.0] [0.25, 0.25, 1.0, 1.0] True"
