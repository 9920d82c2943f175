"""A backend's ``xp`` whose calls run compiled or vmapped: the namespaces that
``array_api_conformance`` measures in each execution mode.

``namespace(backend, mode)`` wraps ``crossgrad.<backend>.xp``. In a compiled mode
(``jax.jit``, ``tf.function(jit_compile=True)``, ``torch.compile(fullgraph=True)``) every
function of the standard that computes arrays runs compiled: its array arguments (also inside
lists, tuples and dicts) are the compiled function's inputs, everything else (Python numbers,
shapes, axes, dtypes) is a constant of the trace, as in an op's body. In a vmapped mode
(``jax.vmap``, ``tf.vectorized_map`` in a ``tf.function``, ``torch.func.vmap``) the
elementwise, statistical and utility functions run on each argument stacked twice along a new
leading axis, vmapped over it; the result is the first example. Only the calls a test of the
suite makes itself run so (the function under test); the suite's tools (Hypothesis's strategies,
its helpers building expected values) call ``xp`` as it is. The data-type functions
(``finfo``, ``result_type``, ...), ``asarray`` of Python data and the functions a mode does not
cover run as ``xp`` has them; results are the framework's own arrays, so every check of the
suite applies unchanged.
"""

from __future__ import annotations

import functools
import importlib
import os
import struct
import sys
import types
from typing import Any, Callable, Sequence

from crossgrad.registry import namespace as names

# What runs in Python whatever the mode: answers about dtypes, not array computations.
_NEVER = frozenset(("can_cast", "finfo", "iinfo", "isdtype", "result_type",
                    "__array_namespace_info__", "from_dlpack"))
_PAGES = {page.rsplit("/", 1)[-1].removesuffix(".html"): fns
          for page, fns in names.STANDARD.items()}
VMAPPED = frozenset(_PAGES["elementwise_functions"] + _PAGES["statistical_functions"]
                    + _PAGES["utility_functions"])
COMPILED = frozenset(names.FUNCTIONS + names.LINALG + names.FFT) - _NEVER


COMPILE_BACKEND = "CROSSGRAD_TORCH_COMPILE_BACKEND"  # torch.compile's backend= in torch-compile.


class _Slot:
  """Where the i-th array argument goes back into the call's arguments."""

  def __init__(self, i: int):
    self.i = i

  def __repr__(self):
    return f"<array {self.i}>"


def _split(tree: Any, is_array: Callable[[Any], bool], arrays: list) -> Any:
  """``tree`` with each array replaced by a `_Slot` (the arrays appended to ``arrays``)."""
  if is_array(tree):
    arrays.append(tree)
    return _Slot(len(arrays) - 1)
  if type(tree) in (list, tuple):
    return type(tree)(_split(t, is_array, arrays) for t in tree)
  if type(tree) is dict:
    return {k: _split(v, is_array, arrays) for k, v in tree.items()}
  return tree


def _join(tree: Any, arrays: Sequence) -> Any:
  if isinstance(tree, _Slot):
    return arrays[tree.i]
  if type(tree) in (list, tuple):
    return type(tree)(_join(t, arrays) for t in tree)
  if type(tree) is dict:
    return {k: _join(v, arrays) for k, v in tree.items()}
  return tree


class _Backend:
  """One framework's array type, compiler, vmap and structure map."""

  def __init__(self, name: str):
    self.name = name
    if name == "jax":
      import jax  # pylint: disable=import-outside-toplevel
      self.is_array, self.compile = (lambda x: isinstance(x, jax.Array)), jax.jit
      self.map = jax.tree_util.tree_map
      self.vmap = lambda f, args: jax.vmap(f)(*args)
      self.stack = lambda a: jax.numpy.stack([a, a])
    elif name == "tensorflow":
      import tensorflow as tf  # pylint: disable=import-outside-toplevel
      self.is_array = lambda x: isinstance(x, (tf.Tensor, tf.Variable))
      self.compile = functools.partial(tf.function, jit_compile=True)
      self.map = tf.nest.map_structure
      self.vmap = lambda f, args: tf.function(
          lambda *a: tf.vectorized_map(lambda b: f(*b), a))(*args)
      self.stack = lambda a: tf.stack([a, a])
    elif name == "torch":
      import torch  # pylint: disable=import-outside-toplevel
      torch._dynamo.config.cache_size_limit = 1 << 20  # pylint: disable=protected-access
      torch._dynamo.config.accumulated_cache_size_limit = 1 << 20  # pylint: disable=protected-access
      self.is_array = lambda x: isinstance(x, torch.Tensor)
      # Inductor by default; COMPILE_BACKEND=aot_eager traces the same graph (Dynamo, no
      # graph breaks, AOTAutograd) without generating code, for a whole-suite run.
      self.compile = functools.partial(torch.compile, fullgraph=True,
                                       backend=os.environ.get(COMPILE_BACKEND, "inductor"))
      self.map = torch.utils._pytree.tree_map  # pylint: disable=protected-access
      self.vmap = lambda f, args: torch.func.vmap(f)(*args)
      self.stack = lambda a: torch.stack([a, a])
    else:
      raise ValueError(f"no compiler or vmap for backend {name!r}")


def _running(run: Callable, fn: Callable) -> Callable:
  """``fn`` called through ``run``, with ``fn``'s name and signature."""
  @functools.wraps(fn)
  def call(*args, **kwargs):
    return run(fn, *args, **kwargs)
  return call


class ModeNamespace:
  """``xp`` (or its ``linalg``/``fft``) with the functions of ``selected`` run by ``run``."""

  def __init__(self, xp: Any, run: Callable, selected: frozenset, name: str):
    self._xp, self._run, self._selected = xp, run, selected
    self.__name__ = name

  def __getattr__(self, attr: str) -> Any:
    value = getattr(self._xp, attr)
    if attr in ("linalg", "fft"):
      value = ModeNamespace(value, self._run, self._selected, f"{self.__name__}.{attr}")
    elif attr in self._selected and callable(value):
      value = _running(self._run, value)
    setattr(self, attr, value)  # Later lookups skip __getattr__.
    return value

  def __dir__(self):
    return dir(self._xp)


def _from_a_test() -> bool:
  """Whether the call into the namespace comes from a test module of the suite."""
  return sys._getframe(3).f_globals.get("__name__", "").startswith(  # pylint: disable=protected-access
      "array_api_tests.test_")


def _compiled_call(backend: _Backend, cache: dict, fn, *args, **kwargs):
  if not _from_a_test():
    return fn(*args, **kwargs)
  arrays = []
  skeleton = _split((args, kwargs), backend.is_array, arrays)
  if not arrays and any(type(a) in (list, dict) for a in args):
    return fn(*args, **kwargs)  # asarray of Python data: nothing to compile.
  key = (fn, repr(skeleton), _float_bits(skeleton))
  if key not in cache:
    # The skeleton is a closure, not a default argument: tf.function reads defaults as
    # inputs and turns a Python complex NaN such as -0 + NaN j into NaN + 0j.
    cache[key] = backend.compile(_fresh_code(_joining(fn, skeleton), len(cache)))
  return cache[key](*arrays)


def _float_bits(tree: Any) -> tuple:
  """The bits of every Python float in ``tree`` (repr shows -NaN as nan: a cache key needs
  them apart)."""
  if type(tree) is float:
    return (struct.pack("<d", tree),)
  if type(tree) is complex:
    return (struct.pack("<dd", tree.real, tree.imag),)
  if type(tree) in (list, tuple):
    return tuple(b for t in tree for b in _float_bits(t))
  if type(tree) is dict:
    return tuple(b for v in tree.values() for b in _float_bits(v))
  return ()


def _fresh_code(body: Callable, n: int) -> Callable:
  """``body`` with a code object of its own: Dynamo caches by code object and guards a
  closure's floats by ``==``, so -0.0 would reuse the trace made for 0.0."""
  code = body.__code__.replace(co_name=f"call_{n}")
  return types.FunctionType(code, body.__globals__, code.co_name, body.__defaults__,
                            body.__closure__)


def _joining(fn, skeleton):
  """``fn`` of the arrays put back into ``skeleton``."""
  def body(*traced):
    a, k = _join(skeleton, traced)
    return fn(*a, **k)
  return body


def _vmapped_call(backend: _Backend, fn, *args, **kwargs):
  if not _from_a_test():
    return fn(*args, **kwargs)
  arrays = []
  skeleton = _split((args, kwargs), backend.is_array, arrays)
  if not arrays:
    return fn(*args, **kwargs)

  out = backend.vmap(_joining(fn, skeleton), [backend.stack(a) for a in arrays])
  return backend.map(lambda x: x[0], out)


MODES = {"jax": ("jit", "vmap"), "tensorflow": ("xla", "vmap"), "torch": ("compile", "vmap")}


def namespace(backend: str, mode: str) -> ModeNamespace:
  """``crossgrad.<backend>.xp`` with each call compiled (``mode`` jit/xla/compile) or vmapped."""
  if mode not in MODES.get(backend, ()):
    raise ValueError(f"modes of {backend!r}: {MODES.get(backend)}")
  xp = getattr(importlib.import_module("crossgrad"), backend).xp
  runner = _Backend(backend)
  if mode == "vmap":
    run, selected = functools.partial(_vmapped_call, runner), VMAPPED
  else:
    run, selected = functools.partial(_compiled_call, runner, {}), COMPILED
  return ModeNamespace(xp, run, selected, f"{xp.__name__} ({mode})")
