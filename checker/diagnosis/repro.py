"""A standalone repro of a divergence: the diverging call, in its framework alone.

`write_repro` writes ``DIR/<name>.py`` and its recorded arguments ``DIR/<name>.npz``; the
script imports only NumPy and the framework (no crossgrad), runs the call there (in the
mode the divergence was found in: ``jax.jit``, ``tf.function``, ``torch.compile``) and in
NumPy, and prints both results, one line each: ``numpy: <json>`` and ``<backend>: <json>``.
Functions are called by their Array API name in the framework's namespace (``torch.mean``,
``tf.experimental.numpy.mean``, ``jnp.linalg.eigh``); an operator (``a - b``) as itself.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable

import numpy as np

from crossgrad.checker.diagnosis.kinds import Diagnosis

_OPERATORS = ("+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>", "<", "<=",
              ">", ">=", "==", "!=")
_UNARY = {"-x": "-{0}", "+x": "+{0}", "abs": "abs({0})", "~": "~{0}"}

# Per backend: its imports, how a NumPy argument becomes its array, its namespace for a
# function (linalg functions, others), how a mode compiles a function, keyword renames.
_FRAMEWORKS = {
    "numpy": ("import numpy as np", "{0}", ("np.linalg", "np"), {}, {}),
    "jax": ("import jax\nimport jax.numpy as jnp", "jnp.asarray({0})",
            ("jnp.linalg", "jnp"), {"jit": "jax.jit({0})"}, {}),
    "tensorflow": ("import tensorflow as tf\nimport tensorflow.experimental.numpy as tnp",
                   "tf.constant({0})", ("tf.linalg", "tnp"),
                   {"graph": "tf.function({0})",
                    "jit": "tf.function({0}, jit_compile=True)"}, {}),
    "torch": ("import torch", "torch.from_numpy({0})", ("torch.linalg", "torch"),
              {"compile": "torch.compile({0})"}, {"axis": "dim", "keepdims": "keepdim"}),
}

_TEMPLATE = '''"""{title}

Written by crossgrad's check ({where}); runs without crossgrad: NumPy and {backend} only.
Prints the result of NumPy, then of {backend}, one JSON line each.
"""

import json
import os

{imports}

HERE = os.path.dirname(os.path.abspath(__file__))
ARRAYS = np.load(os.path.join(HERE, {npz!r}))


def arguments():
  """The reference's recorded arguments, in order (arrays from the .npz beside this)."""
  return {arguments}


def {backend}_arguments():
  """{backend}'s own recorded arguments (where they differ from the reference's)."""
  return {actual_arguments}


def numpy_call(*args):
  return {numpy_call}


def {backend}_call(*args):
  return {framework_call}


def as_list(result):
  if isinstance(result, (tuple, list)):
    return [as_list(r) for r in result]
  result = result.numpy(force=True) if hasattr(result, "numpy") and hasattr(result, "detach") \\
      else np.asarray(result)
  return np.real_if_close(result).tolist() if np.iscomplexobj(result) else result.tolist()


print("numpy:", json.dumps(as_list(numpy_call(*arguments()))))
args = [{to_array} if isinstance(a, np.ndarray) else a for a in {backend}_arguments()]
print("{backend}:", json.dumps(as_list({compiled}(*args))))
'''


def write_repro(diagnosis: Diagnosis, directory: str, name: str | None = None) -> str | None:
  """Writes the repro script of ``diagnosis`` (a divergence from `find_divergence`) and
  its arguments into ``directory``, made if missing; returns the script's path, or None
  where the diagnosis carries no recorded call (not a divergence; arguments too large, a
  method or an index) or its backend is not one of NumPy, JAX, TensorFlow, torch.
  ``name``: the files' stem (default: the cause id, else the call's file and line)."""
  call, backend = diagnosis.values.get("repro"), diagnosis.values.get("backend")
  if not call or backend not in _FRAMEWORKS:
    return None
  stem = re.sub(r"[^A-Za-z0-9_]+", "_", name or diagnosis.cause or
                f"{os.path.basename(diagnosis.file or 'op')}_{diagnosis.line}_{backend}")
  os.makedirs(directory, exist_ok=True)
  arrays: dict[str, np.ndarray] = {}
  arguments = _arguments(call["args"], "arg", arrays)
  actual = _arguments(call.get("actual_args", call["args"]), "actual_arg", arrays)
  np.savez(os.path.join(directory, f"{stem}.npz"), **arrays)
  imports, to_array, _, modes, _ = _FRAMEWORKS[backend]
  mode = diagnosis.values.get("mode", "")
  text = _TEMPLATE.format(
      title=f"Repro: {diagnosis.call} in {backend} ({mode or 'eager'}) and in NumPy.",
      where=diagnosis.where() or "an op", backend=backend, npz=f"{stem}.npz",
      imports=imports if backend == "numpy" else f"import numpy as np\n{imports}",
      arguments=arguments, actual_arguments=actual,
      numpy_call=_expression("numpy", call), framework_call=_expression(backend, call),
      to_array=to_array.format("a"),
      compiled=modes.get(mode, "{0}").format(f"{backend}_call"))
  path = os.path.join(directory, f"{stem}.py")
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
  return path


def _arguments(args: list[dict[str, Any]], prefix: str, arrays: dict[str, np.ndarray]) -> str:
  """The argument list as Python source; arrays go into ``arrays`` (the .npz)."""
  out = []
  for i, arg in enumerate(args):
    if "array" in arg:
      arrays[f"{prefix}{i}"] = _array(arg)
      out.append(f"ARRAYS['{prefix}{i}']")
    else:
      out.append(repr(arg["value"]))
  return f"[{', '.join(out)}]"


def _array(arg: dict[str, Any]) -> np.ndarray:
  """A recorded array argument as NumPy (complex ones were stored as (re, im) pairs)."""
  a = np.asarray(arg["array"])
  if "complex" in arg["dtype"]:
    a = a[..., 0] + 1j * a[..., 1]
  return a.astype(arg["dtype"])


def _expression(backend: str, call: dict[str, Any]) -> str:
  """The call on ``args`` in ``backend``'s terms."""
  name, n = call["name"], len(call["args"])
  if name in _OPERATORS and n == 2:
    return f"args[0] {name} args[1]"
  if name in _UNARY:
    return _UNARY[name].format("args[0]")
  _, _, (linalg, main), _, renames = _FRAMEWORKS[backend]
  module, function = (linalg, name.split(".", 1)[1]) if "." in name else (main, name)
  kwargs = "".join(f", {renames.get(k, k)}={v!r}" for k, v in call["kwargs"].items())
  return f"{module}.{function}(*args{kwargs})"


def write_for_rows(rows: Iterable[Any], directory: str) -> list[str]:
  """One repro per divergence cause among ``rows`` (their ``diagnosis`` attribute, where
  they have one; rows of one cause share its ``cause`` id, else its file, line and
  backend): the scripts' paths, in the rows' order."""
  seen, paths = set(), []
  for row in rows:
    found = getattr(row, "diagnosis", None)
    if isinstance(found, dict):  # A row read back from a report's JSON.
      found = Diagnosis.from_dict(found)
    if found is None or not found.values.get("repro"):
      continue
    key = found.cause or (found.file, found.line, found.values.get("backend"))
    if key in seen:
      continue
    seen.add(key)
    path = write_repro(found, directory)
    if path:
      paths.append(path)
  return paths
