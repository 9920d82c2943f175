"""`import crossgrad` imports no framework (TensorFlow, JAX, PyTorch) and none of the
checker; the backends, the checker and the op families load on first use."""

import json
import re
import subprocess
import sys

import pytest


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


# What `import crossgrad` may load of its own: the registry (with the built-in ops), the
# Keras and Triton import hooks, and the packages holding them.
_EAGER = re.compile(r"crossgrad(\.registry(\..+)?|\.api(\.keras_hook|\.submodules)?|"
                    r"\.backends(\.common(\.triton_first)?)?)?")


def test_import_brings_in_the_registry_and_numpy_only():
  out = json.loads(_python(
      "import json, sys; before = set(sys.modules); import crossgrad; "
      "print(json.dumps(sorted(set(sys.modules) - before)))"))
  ours = [m for m in out if m == "crossgrad" or m.startswith("crossgrad.")]
  assert "numpy" in out and "crossgrad.registry.ops.leaky_relu" in ours
  assert [m for m in ours if not _EAGER.fullmatch(m)] == []
  heavy = ("triton", "tensorflow", "jax", "jaxlib", "torch", "keras", "absl")
  assert sorted(m for m in out if m.split(".")[0] in heavy) == []


def test_lazy_names_load_on_first_use():
  out = json.loads(_python(
      "import json, sys, crossgrad as cg; engine = 'crossgrad.checker.engine'; "
      "first = engine in sys.modules; from crossgrad import Report; f = cg.cross_check; "
      "print(json.dumps([first, engine in sys.modules, f.__module__, Report.__module__, "
      "cg.Row.__module__, cg.SparseData.__module__, cg.numpy.__name__, cg.sparse.__name__, "
      "sorted(set(cg.__all__) - set(dir(cg))), 'tensorflow' in sys.modules]))"))
  assert out == [False, True, "crossgrad.checker.engine", "crossgrad.checker.report",
                 "crossgrad.checker.report", "crossgrad.sparse.data", "crossgrad.api.numpy",
                 "crossgrad.sparse", [], False]


def test_unknown_attribute_is_an_attribute_error():
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  assert not hasattr(cg, "cross_chek")
  with pytest.raises(AttributeError, match="cross_chek"):
    cg.cross_chek  # pylint: disable=pointless-statement
