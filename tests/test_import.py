"""`import crossgrad` imports no framework (TensorFlow, JAX, PyTorch); the backends load on
first use."""

import subprocess
import sys


def _python(code):
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        check=True, timeout=300).stdout.strip()


def test_import_is_framework_free():
  out = _python("import sys, crossgrad; "
                "print(sorted(m for m in ('tensorflow', 'jax', 'torch', 'array_api_compat') "
                "if m in sys.modules))")
  assert out == "[]"


def test_backends_load_lazily():
  out = _python("import sys, crossgrad; crossgrad.jax.get('leaky_relu'); "
                "print('jax' in sys.modules, 'tensorflow' in sys.modules)")
  assert out == "True False"


def test_torch_loads_lazily_and_alone():
  out = _python("import sys, crossgrad; crossgrad.torch.get('leaky_relu'); "
                "print('torch' in sys.modules, 'jax' in sys.modules, "
                "'tensorflow' in sys.modules)")
  assert out == "True False False"


def test_public_names():
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  for name in ("OpDef", "register", "get", "names", "cross_check", "CrossgradError", "numpy"):
    assert hasattr(cg, name), name
  assert callable(cg.numpy.get) and callable(cg.numpy.vjp)
  assert {"tensorflow", "jax", "torch"} <= set(dir(cg))
