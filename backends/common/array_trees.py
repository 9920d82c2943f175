"""The array leaves of the trees op bodies take and return (tuples, lists, dicts, named
tuples), mapped: how a backend wraps a body's arrays in its array object and unwraps them
(`torch.array_object`, `jax.array_object`), and the namespace of functions doing so that a
body gets (`LazyNamespace`; JAX's and TensorFlow's)."""

from __future__ import annotations

import functools
from typing import Any, Callable


def mapper(leaf: type, convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
  """A function of a tree giving it with every instance of ``leaf`` in it as
  ``convert(leaf)``; other leaves stay as they are."""
  def map_tree(tree: Any) -> Any:
    if isinstance(tree, leaf):
      return convert(tree)
    kind = type(tree)
    if kind is tuple or kind is list:  # A list, not a generator: this runs on every op call.
      return kind([convert(t) if isinstance(t, leaf) else map_tree(t) for t in tree])
    if kind is dict:
      return {k: map_tree(v) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # A named tuple.
      return kind(*map(map_tree, tree))
    return tree
  return map_tree


def arrays_in_and_out(fn: Callable[..., Any], wrap: Callable[[Any], Any],
                      unwrap: Callable[[Any], Any]) -> Callable[..., Any]:
  """``fn`` taking and giving array objects: its arguments unwrapped, its result wrapped."""
  @functools.wraps(fn)  # fn's name, doc and signature (inspect.signature follows __wrapped__).
  def call(*args, **kwargs):
    return wrap(fn(*unwrap(args), **unwrap(kwargs)) if kwargs else fn(*unwrap(args)))
  return call


class LazyNamespace:
  """A backend's ``xp`` (or its ``linalg``/``fft``) as an op body sees it: each name is
  looked up in ``xp`` on first use, made what the body gets (`made`) and set, so later
  lookups skip ``__getattr__``."""

  DEFAULT_NAME = "xp"  # ``__name__`` where ``xp`` has none.

  def __init__(self, xp: Any):
    self._xp = xp
    self.__name__ = getattr(xp, "__name__", self.DEFAULT_NAME)

  def __getattr__(self, name: str) -> Any:
    value = getattr(self._xp, name)
    value = type(self)(value) if name in ("linalg", "fft") else self.made(name, value)
    setattr(self, name, value)
    return value

  def __dir__(self):
    return dir(self._xp)

  def made(self, name: str, value: Any) -> Any:
    """What the body gets for ``xp.name``, which is ``value``."""
    raise NotImplementedError
