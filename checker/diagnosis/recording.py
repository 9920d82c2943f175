"""Recording an op's ``xp`` program: every namespace call and array operator its forward and
backward make, with the user's source line, inputs and outputs.

`Namespace` wraps the ``xp`` a backend hands the op; the arrays it returns are `Traced`
proxies whose operators (``a - b``, ``x[i]``, ``x.T``) are recorded too, so the op's own
code runs unchanged against the framework. Values are read as NumPy where they are
concrete (eager); under a tracer (jit, tf.function, torch.compile) only the call and its
line are recorded. Backends are untouched: the checker hands the wrapped namespace to the
op's functions itself (`divergence`).
"""

from __future__ import annotations

import dataclasses
import operator
import os
import sys
from typing import Any, Callable

import numpy as np

_HERE = os.path.abspath(__file__)
SUBMODULES = ("linalg", "fft")


class Stop(Exception):
  """Raised at the call a truncated program stops after; ``args[0]``: its outputs (no
  ``__init__`` of its own: torch.compile traces the raise)."""


@dataclasses.dataclass
class Call:
  """One recorded call: ``name`` as written (``linalg.eigh``, ``-`` for an operator)."""

  name: str
  file: str
  line: int
  phase: str  # "forward" or "backward".
  args: list[Any]  # Positional arguments: NumPy arrays (None where traced) or plain values.
  kwargs: dict[str, Any]
  outputs: list[np.ndarray | None]  # One per array of the result (a tuple's elements).
  dtypes: list[str]  # The outputs' dtype names.
  sources: list[tuple[int, int] | None]  # Per argument, the (call, output) that made it.


@dataclasses.dataclass
class Tape:
  """The calls of one run, in order. ``stop_at``: raise `Stop` with call k's result.
  ``light``: keep only each call's raw outputs (in ``keep``), nothing a compiler cannot
  trace (no frames, no NumPy): for compiled modes, whose values are not concrete."""

  calls: list[Call] = dataclasses.field(default_factory=list)
  phase: str = "forward"
  stop_at: int | None = None
  keep: list[Any] = dataclasses.field(default_factory=list)  # Raw outputs, when kept.
  keep_raw: bool = False
  light: bool = False
  count: int = 0
  final_sources: list[tuple[int, int] | None] = dataclasses.field(default_factory=list)
  made: dict[int, tuple[int, int]] = dataclasses.field(default_factory=dict)
  alive: list[Any] = dataclasses.field(default_factory=list)  # Keeps ``made``'s ids valid.

  def clear(self):
    """Forgets every call: a mode may trace the program more than once."""
    self.calls.clear(), self.keep.clear(), self.made.clear(), self.alive.clear()
    self.phase, self.count = "forward", 0


def to_numpy(x: Any) -> np.ndarray | None:
  """``x`` as NumPy, or None where it has no concrete value (a tracer, a graph tensor)."""
  try:
    if hasattr(x, "detach"):
      x = x.detach().cpu()
    return np.array(x, copy=True)
  except Exception:  # pylint: disable=broad-except  # Every framework's tracer error.
    return None


def _is_array(x: Any) -> bool:
  return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, (type, np.dtype))


def unwrap(tree: Any) -> Any:
  """``tree`` with every `Traced` replaced by its array (tuples, lists, dicts)."""
  if isinstance(tree, Traced):
    return tree.value
  if isinstance(tree, (tuple, list)):
    items = [unwrap(x) for x in tree]
    return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
  if isinstance(tree, dict):
    return {k: unwrap(v) for k, v in tree.items()}
  return tree


def wrap(tree: Any, tape: Tape) -> Any:
  """``tree`` with every array made a `Traced` on ``tape``."""
  if _is_array(tree) and not isinstance(tree, Traced):
    return Traced(tree, tape)
  if isinstance(tree, (tuple, list)):
    items = [wrap(x, tape) for x in tree]
    return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
  if isinstance(tree, dict):
    return {k: wrap(v, tape) for k, v in tree.items()}
  return tree


def _user_frame() -> tuple[str, int]:
  """File and line of the innermost frame outside this module: the op's code."""
  frame = sys._getframe(1)  # pylint: disable=protected-access
  while frame is not None and os.path.abspath(frame.f_code.co_filename) == _HERE:
    frame = frame.f_back
  return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("?", 0)


def _leaves(result: Any) -> list[Any]:
  if isinstance(result, (tuple, list)):
    return [x for item in result for x in _leaves(item)]
  return [result] if _is_array(result) else []


def record(tape: Tape, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
  """Calls ``fn`` on the unwrapped arguments, records the call on ``tape`` and returns its
  result wrapped (or raises `Stop` with it where the tape truncates there)."""
  if tape.light:
    return _record_light(tape, fn, args, kwargs)
  file, line = _user_frame()
  raw = unwrap(args)
  result = fn(*raw, **unwrap(kwargs))
  leaves = _leaves(result)
  plain = lambda a: to_numpy(a) if _is_array(a) else a  # noqa: E731
  sources = [tape.made.get(id(a)) for a in raw]
  k = len(tape.calls)
  tape.calls.append(Call(
      name, file, line, tape.phase, [plain(a) for a in raw],
      {key: v for key, v in kwargs.items() if not _is_array(v)},
      [to_numpy(x) for x in leaves], [str(getattr(x, "dtype", "")) for x in leaves],
      sources))
  tape.made.update({id(x): (k, j) for j, x in enumerate(leaves)})
  tape.alive.append(leaves)
  if tape.keep_raw:
    tape.keep.append(leaves)
  if tape.stop_at == k:
    raise Stop(leaves)
  return wrap(result, tape)


def _record_light(tape: Tape, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
  result = fn(*unwrap(args), **unwrap(kwargs))
  leaves = _leaves(result)
  k, tape.count = tape.count, tape.count + 1
  tape.keep.append(leaves)
  if tape.stop_at == k:
    raise Stop(leaves)
  return wrap(result, tape)


class Namespace:
  """A recording view of a backend's ``xp`` (and its ``linalg``/``fft``)."""

  def __init__(self, xp: Any, tape: Tape, prefix: str = ""):
    self._xp, self._tape, self._prefix = xp, tape, prefix

  def __getattr__(self, name: str) -> Any:
    value = getattr(self._xp, name)
    if name in SUBMODULES and not self._prefix:
      return Namespace(value, self._tape, f"{name}.")
    if not callable(value) or isinstance(value, type) or name.startswith("__"):
      return value
    full = self._prefix + name
    return lambda *args, **kwargs: record(self._tape, full, value, args, kwargs)


def _binary(symbol: str, op: Callable[[Any, Any], Any], reflected: bool = False):
  def method(self, other):
    a, b = (other, self) if reflected else (self, other)
    return record(self.tape, symbol, op, (a, b), {})
  return method


def _unary(symbol: str, op: Callable[[Any], Any]):
  return lambda self: record(self.tape, symbol, op, (self,), {})


class Traced:
  """An array of the framework, its operators recorded on a `Tape`."""

  __array_ufunc__ = None  # NumPy arrays defer to our reflected operators.
  __hash__ = object.__hash__

  def __init__(self, value: Any, tape: Tape):
    object.__setattr__(self, "value", value)
    object.__setattr__(self, "tape", tape)

  def __getattr__(self, name: str) -> Any:
    value = getattr(self.value, name)
    if callable(value):
      return lambda *args, **kwargs: record(self.tape, f"x.{name}", value, args, kwargs)
    if _is_array(value):
      return record(self.tape, f"x.{name}", lambda: value, (), {})
    return value

  def __getitem__(self, key):
    return record(self.tape, "[]", operator.getitem, (self, key), {})

  def __setitem__(self, key, value):
    self.value[unwrap(key)] = unwrap(value)

  def __len__(self):
    return len(self.value)

  def __iter__(self):
    return (self[i] for i in range(len(self.value)))

  def __bool__(self):
    return bool(self.value)

  def __float__(self):
    return float(self.value)

  def __int__(self):
    return int(self.value)

  def __index__(self):
    return operator.index(self.value)

  def __complex__(self):
    return complex(self.value)

  def __array__(self, dtype=None, copy=None):
    del copy
    return np.asarray(to_numpy(self.value), dtype=dtype)

  def __repr__(self):
    return f"Traced({self.value!r})"


_BINARY = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//",
           "mod": "%", "pow": "**", "matmul": "@", "and": "&", "or": "|", "xor": "^",
           "lshift": "<<", "rshift": ">>"}
for _name, _symbol in _BINARY.items():
  _op = getattr(operator, _name if _name not in ("and", "or") else _name + "_")
  setattr(Traced, f"__{_name}__", _binary(_symbol, _op))
  setattr(Traced, f"__r{_name}__", _binary(_symbol, _op, reflected=True))
for _name, _symbol in {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
                       "ne": "!="}.items():
  setattr(Traced, f"__{_name}__", _binary(_symbol, getattr(operator, _name)))
for _name, _symbol in {"neg": "-x", "pos": "+x", "abs": "abs", "invert": "~"}.items():
  setattr(Traced, f"__{_name}__", _unary(_symbol, getattr(operator, _name)))
