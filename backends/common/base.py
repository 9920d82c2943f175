"""What every backend shares: loading backends by name (built-in or registered), the
cached `get`, mode checks. The protocol itself is `crossgrad.backends.common.protocol`."""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import importlib.util
import itertools
import sys
import types
from typing import Any, Callable, Sequence, TypeVar

from crossgrad.backends.common import protocol
from crossgrad.registry import kernels, op_registry
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

BUILT_IN = ("numpy", "tensorflow", "jax", "torch")
_OPTIONAL = ("torch",)  # Cross-checked by default only where installed.
# The framework each built-in backend imports (and its pip extra): its arrays exist only once
# that is imported.
_FRAMEWORKS = {"numpy": "numpy", "tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
_REGISTERED: dict[str, Any] = {}
_COMPILED: dict[tuple, Any] = {}


def names() -> list[str]:
  """Every backend that `load` takes: the built-in ones, then the registered ones."""
  return list(BUILT_IN) + sorted(set(_REGISTERED) - set(BUILT_IN))


def default_backends() -> list[str]:
  """What the cross-check compares with the reference by default: TensorFlow and JAX,
  and each optional framework (PyTorch) that is installed (found without importing it)."""
  return ["tensorflow", "jax"] + [n for n in _OPTIONAL if importlib.util.find_spec(n)]


def register(backend: Any) -> Any:
  """Adds a backend (a module or object implementing `protocol.Backend`) under its NAME."""
  missing = [m for m in protocol.MEMBERS if not hasattr(backend, m)]
  if missing:
    raise CrossgradError(
        "not a backend: members of crossgrad.backends.common.protocol.Backend are missing",
        backend=getattr(backend, "NAME", None), argument="backend",
        expected=", ".join(protocol.MEMBERS), actual=f"missing {', '.join(missing)}")
  if backend.NAME in BUILT_IN:
    raise CrossgradError("a built-in backend has this name", backend=backend.NAME,
                         argument="backend.NAME", expected=f"not one of {list(BUILT_IN)}",
                         actual=repr(backend.NAME))
  _REGISTERED[backend.NAME] = backend
  return backend


def unregister(name: str) -> None:
  """Removes a backend added with `register`."""
  _REGISTERED.pop(name, None)


def load(name: str):
  """The backend called ``name``, importing its framework on first use."""
  if name in _REGISTERED:
    return _REGISTERED[name]
  if name not in BUILT_IN:
    raise CrossgradError("unknown backend", argument=f"backend {name!r}",
                         expected=" or ".join(names()), actual=repr(name))
  try:
    return importlib.import_module(f"crossgrad.backends.{name}")
  except ImportError as e:
    raise CrossgradError(
        f"backend needs a framework that is not installed ({e})", backend=name,
        argument=f"backend {name!r}",
        hint=f'Install it with: pip install "crossgrad[{_FRAMEWORKS[name]}]"') from e


def backend_of(*arrays: Any) -> str:
  """The backend the first claimed array belongs to: the one whose ``ARRAY_MODULES``
  (`protocol.Arrays`) prefixes the module of the array's type; "numpy" where none claims
  one. Built-in backends whose framework is not imported are not loaded: none of their
  arrays can exist."""
  loaded = [load(name) for name in names()
            if name in _REGISTERED or _FRAMEWORKS[name] in sys.modules]
  claims = [(b.NAME, tuple(protocol.capabilities(b).ARRAY_MODULES)) for b in loaded]
  for x in arrays:
    module = type(x).__module__
    for name, prefixes in claims:
      if module.startswith(prefixes):
        return name
  return "numpy"


_IMPL = contextvars.ContextVar("crossgrad_impl", default=None)


@contextlib.contextmanager
def implementation(impl: str | None):
  """Within the block, a backend's ``get`` without ``impl=`` returns implementation ``impl``
  ("emitted" or a kernel's name; None: the last kernel registered, else the emitted op):
  how the cross-check runs ``evaluate`` on each implementation."""
  token = _IMPL.set(impl)
  try:
    yield
  finally:
    _IMPL.reset(token)


def current_implementation() -> str | None:
  """The implementation `implementation` set for this block (None outside one)."""
  return _IMPL.get()


def make_get(backend: str, emit: Callable[[OpDef, dict], Callable[..., Any]],
             wrap_kernel: Callable[[OpDef, dict, Any], Callable[..., Any]] | None = None):
  """Builds a backend's ``get``: one function per (op, implementation, static parameters),
  the emitted op or, with ``wrap_kernel``, a registered kernel (`registry.kernels`)."""
  cache: dict[tuple, Callable[..., Any]] = {}

  def get(op: str | OpDef, /, *, impl: str | None = None, **params: Any) -> Callable[..., Any]:
    opdef = op if isinstance(op, OpDef) else op_registry.get(op)
    resolved = opdef.resolve_params(params, backend)
    kernel = (kernels.lookup(opdef.name, backend, _IMPL.get() if impl is None else impl)
              if wrap_kernel is not None else None)
    # By identity (the cached function holds the OpDef, so its id stays unique): a key
    # Dynamo can trace, which hashing the OpDef dataclass is not (torch.compile).
    key = (id(opdef), id(kernel), tuple(sorted(resolved.items())))
    fn = cache.get(key)
    if fn is None:
      fn = cache[key] = (emit(opdef, resolved) if kernel is None
                         else wrap_kernel(opdef, resolved, kernel))
      fn.__name__ = fn.__qualname__ = opdef.name
      what = "emitted" if kernel is None else f"kernel {kernel.name!r}"
      fn.__doc__ = f"crossgrad op '{opdef.name}' ({backend}, {what}) with params {resolved}."
      fn.op, fn.params, fn.impl = opdef, resolved, "emitted" if kernel is None else kernel.name
    return fn

  get.__doc__ = (f"The {backend} version of a registered op (name or OpDef), with static "
                 "keyword parameters; cached per (op, parameters). A kernel registered for "
                 f"{backend} (`crossgrad.register_kernel`) is returned in its place, the last "
                 "one registered; ``impl=NAME`` picks one, ``impl=\"emitted\"`` the emitted op.")
  return get


def check_mode(backend: str, mode: str, modes: tuple[str, ...]):
  if mode not in modes:
    raise CrossgradError("unknown mode", backend=backend, argument="mode",
                         expected=" or ".join(modes), actual=repr(mode))


_K = TypeVar("_K")
_V = TypeVar("_V")


def interned(cache: dict[_K, _V], key: _K, make: Callable[[_K], _V], limit: int) -> _V:
  """``cache[key]``, made by ``make(key)`` and stored on a miss (a hit costs one lookup).
  Bounded: a process that keeps meeting new shapes or signatures would otherwise grow the
  cache without end, so at ``limit`` entries it is cleared and starts afresh."""
  try:
    return cache[key]
  except KeyError:
    pass
  value = make(key)  # First: a ``make`` that raises leaves the cache as it was.
  if len(cache) >= limit:
    cache.clear()
  cache[key] = value
  return value


def compiled(key: tuple, build: Callable[[], Any]) -> Any:
  """``build()``'s result, made once per ``key`` (emitted function, mode, device or input
  signature): a backend's `evaluate` keeps its traced and compiled runner, so evaluating an
  op again on inputs of the same shapes and dtypes (the cross-check's special values)
  compiles nothing.
  Bounded: forgets everything past 256 keys."""
  return interned(_COMPILED, key, lambda _: build(), 256)


_OWN_CODES = itertools.count()


def own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
  """``fn`` with a code object of its own, named apart (code objects compare by value).
  Frameworks keep per-function state by code object (Dynamo its cache and recompile
  limit, `tf.function` its count of retracing calls), so closures made by one line would
  share it: TF would warn of "retracing" where each of them traced once."""
  name = f"{fn.__code__.co_name}_{next(_OWN_CODES)}"
  return types.FunctionType(fn.__code__.replace(co_name=name, co_qualname=name),
                            fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def merge_cotangents(op: OpDef, diff_cotangents) -> tuple:
  """Cotangents of the differentiable inputs, spread to one entry per input."""
  merged = [None] * len(op.input_names)
  for i, ct in zip(op.diff_argnums, diff_cotangents):
    merged[i] = ct
  return tuple(merged)


def of_diff(fn: Callable[..., Any], diff: Sequence[int], args: Sequence[Any]):
  """``fn`` as a function of the inputs at ``diff``, the others fixed to ``args``."""
  def f(*moved):
    full = list(args)
    for i, x in zip(diff, moved):
      full[i] = x
    return fn(*full)
  return f
