"""Remembered verdicts: an op that passed is not checked again while nothing it depends on
changed (as Bazel does not run a test whose inputs did not change).

An op's key (`op_key`) covers its definition (every `OpDef` field; functions by their code,
constants, defaults, closures and the functions and values they use from their own files,
recursively), its kernels, the selection (backends, dtypes, modes, devices and the other
flags that choose rows), crossgrad (its version and its files) and the frameworks' versions
(package metadata: nothing is imported), and the machine's devices where they show without
starting a framework (``/dev``, ``/proc/driver/nvidia``, the device variables). Only green
ops are stored, each entry one JSON file (its rows) in `directory`, written to a temporary
file and renamed, so concurrent runs never read half an entry.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import os
import pathlib
import platform
import sys
import tempfile
import types
from typing import Any, Mapping, Sequence

import numpy as np

from crossgrad.checker.report import INFORMATIONAL, Report, Row
from crossgrad.registry import kernels as kernels_lib
from crossgrad.registry.opdef import OpDef

FOLDER = "verdicts"  # Under the compile caches' directory (`compile_cache.directory`).
ROOT = pathlib.Path(__file__).resolve().parent.parent  # crossgrad's own files.
# The distributions whose versions a backend's rows depend on.
DISTRIBUTIONS = {
    "numpy": ("numpy", "ml_dtypes"),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tf-keras", "ml_dtypes"),
    "jax": ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "libtpu"),
    "torch": ("torch", "triton"),
    "keras": ("keras", "tensorflow", "jax", "jaxlib", "torch"),
}
DEVICE_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS",
              "JAX_PLATFORMS", "XLA_FLAGS", "TF_XLA_FLAGS")
_SIMPLE = (bool, int, float, complex, str, bytes, type(None))


def directory(cache_dir: str) -> str:
  return os.path.join(cache_dir, FOLDER)


# Functions and values, by what they are rather than where they live in memory.

def _library_file(filename: str) -> bool:
  """Code of crossgrad (covered by `crossgrad_key`) or of an installed package."""
  path = os.path.abspath(filename)
  prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(ROOT)}
  return filename.startswith("<frozen") or any(path.startswith(p + os.sep) for p in prefixes)


def _user_class(cls: type) -> bool:
  module = sys.modules.get(cls.__module__)
  filename = getattr(module, "__file__", None)
  return bool(filename) and not _library_file(filename)


def _code_key(code: types.CodeType, globals_: Mapping[str, Any], seen: set) -> list:
  consts = [_code_key(c, globals_, seen) if isinstance(c, types.CodeType) else _value_key(c, seen)
            for c in code.co_consts]
  used = [(name, _value_key(globals_[name], seen)) for name in code.co_names
          if name in globals_]
  return [code.co_code.hex(), code.co_names, code.co_varnames, consts, used]


def _function_key(fn: types.FunctionType, seen: set) -> Any:
  if id(fn) in seen:
    return ["recursive", fn.__qualname__]
  seen.add(id(fn))
  if _library_file(fn.__code__.co_filename):  # Its package's version stands for its code.
    top = sys.modules.get((fn.__module__ or "").split(".")[0])
    return ["library", fn.__module__, fn.__qualname__, str(getattr(top, "__version__", ""))]
  cells = [_value_key(c.cell_contents, seen) if c.cell_contents is not fn else "self"
           for c in fn.__closure__ or () if _filled(c)]
  return [fn.__qualname__, _code_key(fn.__code__, fn.__globals__, seen),
          _value_key(fn.__defaults__, seen), _value_key(fn.__kwdefaults__, seen), cells]


def _filled(cell) -> bool:
  try:
    cell.cell_contents  # pylint: disable=pointless-statement
    return True
  except ValueError:
    return False


def _value_key(value: Any, seen: set) -> Any:
  """A JSON-able stand-in for ``value`` that changes when it does."""
  defined_by = getattr(value, "defined_by", None)
  if isinstance(defined_by, (list, tuple)):
    return [_value_key(f, seen) for f in defined_by]
  if isinstance(value, _SIMPLE):
    return repr(value)
  if isinstance(value, (list, tuple)):
    return [type(value).__name__, [_value_key(v, seen) for v in value]]
  if isinstance(value, (set, frozenset)):
    return sorted(json.dumps(_value_key(v, seen)) for v in value)
  if isinstance(value, dict):
    return [[repr(k), _value_key(v, seen)] for k, v in value.items()]
  if isinstance(value, np.ndarray):
    return [str(value.dtype), value.shape, hashlib.sha256(value.tobytes()).hexdigest()]
  if isinstance(value, np.generic):
    return repr(value)
  if dataclasses.is_dataclass(value) and not isinstance(value, type):
    return [type(value).__qualname__,
            [[f.name, _value_key(getattr(value, f.name), seen)] for f in dataclasses.fields(value)
             if f.init]]
  if isinstance(value, types.FunctionType):
    return _function_key(value, seen)
  if isinstance(value, functools.partial):
    return ["partial", _value_key(value.func, seen), _value_key(value.args, seen),
            _value_key(value.keywords, seen)]
  if isinstance(value, (types.MethodType, staticmethod, classmethod)):
    return ["method", _value_key(value.__func__, seen)]
  if isinstance(value, property):
    return ["property", _value_key(value.fget, seen), _value_key(value.fset, seen)]
  if isinstance(value, type) and _user_class(value) and id(value) not in seen:
    seen.add(id(value))  # A class of the user's files: its methods and attributes.
    return ["class", value.__qualname__,
            [[k, _value_key(v, seen)] for k, v in vars(value).items() if not k.startswith("__")
             or k in ("__call__", "__init__")]]
  if isinstance(value, (types.ModuleType, type, types.BuiltinFunctionType)):
    return [type(value).__name__, getattr(value, "__module__", None) or "",
            getattr(value, "__qualname__", getattr(value, "__name__", ""))]
  if _user_class(type(value)):  # An instance of a user's class: the class and its state.
    return ["instance", _value_key(type(value), seen),
            _value_key(vars(value), seen) if hasattr(value, "__dict__") else ""]
  return ["object", type(value).__module__, type(value).__qualname__]


def definition_key(op: OpDef, backends: Sequence[str]) -> list:
  """What the op's rows depend on in its own definition and kernels."""
  seen: set = set()
  fields = [[f.name, _value_key(getattr(op, f.name), seen)] for f in dataclasses.fields(op)]
  kernels = [[k.backend, k.name, _value_key(k.fn, seen), _value_key(k.unsupported_modes, seen)]
             for backend in ("numpy", *backends) for k in kernels_lib.kernels(op, backend)]
  return [fields, kernels]


# What is outside the op.

def versions(backends: Sequence[str]) -> dict[str, str | None]:
  """crossgrad's and the backends' distributions' versions, from their metadata."""
  names = ["crossgrad"] + [d for b in ("numpy", *backends) for d in DISTRIBUTIONS.get(b, ())]
  found = {}
  for name in dict.fromkeys(names):
    try:
      found[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      found[name] = None
  return found


@functools.cache
def crossgrad_key() -> str:
  """crossgrad's own files (a checkout between releases changes without a new version)."""
  digest = hashlib.sha256()
  for path in sorted(ROOT.rglob("*.py")):
    parts = path.relative_to(ROOT).parts
    if any(p in ("tests", "_build", "out") or p.startswith((".", "bazel-")) for p in parts):
      continue  # Tests, build outputs, checkouts' hidden folders.
    stat = path.stat()
    digest.update(f"{path.relative_to(ROOT)} {stat.st_size} {stat.st_mtime_ns}\n".encode())
  return digest.hexdigest()


def devices() -> dict[str, Any]:
  """The machine's devices as far as they show without starting a framework."""
  def listing(folder: str, prefixes: tuple[str, ...] = ("",)) -> list[str]:
    try:
      return sorted(n for n in os.listdir(folder) if n.startswith(prefixes))
    except OSError:
      return []
  return {"machine": platform.machine(), "cpus": os.cpu_count(),
          "dev": listing("/dev", ("nvidia", "accel", "vfio", "kfd")),
          "nvidia": listing("/proc/driver/nvidia/gpus"),
          "env": {name: os.environ.get(name) for name in DEVICE_ENV}}


def op_key(op: OpDef, selection: Mapping[str, Any]) -> str:
  """The entry's name: a digest of everything the op's verdict depends on."""
  backends = list(selection.get("backends") or ())
  text = json.dumps([definition_key(op, backends), sorted(selection.items(), key=str),
                     versions(backends), crossgrad_key(), devices(), sys.version],
                    default=repr)
  return hashlib.sha256(text.encode()).hexdigest()


# The entries.

def lookup(folder: str, key: str) -> tuple[list[Row], dict[str, Any]] | None:
  """The rows remembered under ``key`` and the environment they ran in, or None."""
  try:
    data = json.loads(pathlib.Path(folder, key + ".json").read_text())
    report = Report.from_dict({"rows": data["rows"], "seconds": 0,
                               "environment": data["environment"]})
  except (OSError, ValueError, KeyError, TypeError):
    return None  # No entry, or one this crossgrad cannot read: check again.
  return report.rows, report.environment


def green(rows: Sequence[Row]) -> bool:
  """Rows to remember: all passed, and at least one verified something."""
  return bool(rows) and all(r.ok for r in rows) and any(
      r.check not in INFORMATIONAL for r in rows)


def store(folder: str, key: str, rows: Sequence[Row], environment: Mapping[str, Any]) -> bool:
  """Remembers ``rows`` (green ones only) under ``key``; False where it cannot write."""
  if not green(rows):
    return False
  data = Report(list(rows), 0.0, dict(environment)).to_dict()
  try:
    os.makedirs(folder, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=key[:16], suffix=".tmp")
    with os.fdopen(fd, "w") as f:
      json.dump({"rows": data["rows"], "environment": data["environment"]}, f, default=str)
    os.replace(temporary, os.path.join(folder, key + ".json"))
  except OSError:
    return False
  return True


@dataclasses.dataclass
class Verdicts:
  """One run's keys (op name to key) and the rows remembered for some of them: on disk in
  ``folder`` (green ones; None: not used) and in ``memory`` (every verdict of a --watch)."""

  folder: str | None
  keys: dict[str, str]
  memory: dict[str, tuple[list[Row], dict[str, Any]]] | None = None
  remembered: dict[str, list[Row]] = dataclasses.field(default_factory=dict)
  cached: list[str] = dataclasses.field(default_factory=list)  # Found on disk.
  unchanged: list[str] = dataclasses.field(default_factory=list)  # Found in memory.
  environment: dict[str, Any] = dataclasses.field(default_factory=dict)

  def todo(self, ops: Sequence[OpDef]) -> list[OpDef]:
    """The ops to check: those not remembered."""
    return [op for op in ops if op.name not in self.remembered]

  def merged(self, ops: Sequence[OpDef], report: Report | None, seconds: float) -> Report:
    """The report of every op: remembered rows and ``report``'s, in the order of ``ops``."""
    checked = report.rows if report is not None else []
    rows = [r for op in ops for r in self.remembered.get(op.name) or
            [r for r in checked if r.op == op.name]]
    rows += [r for r in checked if r.op not in {op.name for op in ops}]
    environment = report.environment if report is not None else self.environment
    return Report(rows, report.seconds if report is not None else seconds,
                  {**environment, "cached_ops": sorted(self.remembered)})

  def remember(self, report: Report) -> int:
    """Stores the checked ops of ``report``, in memory, and on disk the green ones;
    returns how many went to disk."""
    stored = 0
    for name, key in self.keys.items():
      if name in self.remembered:
        continue
      rows = [r for r in report.rows if r.op == name]
      if self.memory is not None and rows:
        self.memory[key] = (rows, report.environment)
      if self.folder is not None:
        stored += store(self.folder, key, rows, report.environment)
    return stored


def recall(folder: str | None, ops: Sequence[OpDef], selection: Mapping[str, Any],
           memory: dict | None = None) -> Verdicts:
  """The keys of ``ops`` under ``selection`` (the row flags' values) and what is remembered
  (in ``memory`` first, then in ``folder``)."""
  keys = {op.name: op_key(op, selection) for op in ops}
  verdicts = Verdicts(folder, keys, memory)
  for name, key in keys.items():
    entry = (memory or {}).get(key)
    found = verdicts.unchanged
    if entry is None and folder is not None:
      entry, found = lookup(folder, key), verdicts.cached
    if entry is not None:
      (verdicts.remembered[name], verdicts.environment), _ = entry, found.append(name)
  return verdicts
