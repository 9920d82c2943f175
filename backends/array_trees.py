"""The array leaves of the trees op bodies take and return (tuples, lists, dicts, named
tuples), mapped: how a backend wraps a body's arrays in its array object and unwraps them
(`torch_array_object`, `jax_array_object`)."""

from __future__ import annotations

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
