"""``import crossgrad.torch`` (and the other framework modules) gives what ``crossgrad.torch``
gives, loading only that framework; other names still fail to import."""

import subprocess
import sys


def _python(code):
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        check=True, timeout=300).stdout.strip()


def test_import_crossgrad_torch_is_the_attribute():
  out = _python("import sys\n"
                "import crossgrad.torch\n"
                "from crossgrad import torch as attribute\n"
                "import crossgrad.api.torch as api\n"
                "print(crossgrad.torch is attribute is api is sys.modules['crossgrad.torch'],"
                " 'torch' in sys.modules, 'jax' in sys.modules, 'tensorflow' in sys.modules)\n"
                "import torch\n"
                "x = torch.tensor([-2.0, 3.0], requires_grad=True)\n"
                "crossgrad.torch.get('leaky_relu', alpha=0.5)(x).sum().backward()\n"
                "print(x.grad.tolist())\n")
  # leaky_relu's derivative: alpha below 0, 1 above.
  assert out.splitlines() == ["True True False False", "[0.5, 1.0]"]


def test_other_names_still_fail_to_import():
  out = _python("import crossgrad\n"
                "try:\n"
                "  import crossgrad.no_such_module\n"
                "except ModuleNotFoundError as e:\n"
                "  print(e.name)\n")
  assert out == "crossgrad.no_such_module"
