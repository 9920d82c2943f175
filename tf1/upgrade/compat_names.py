"""TF1 names TF2 dropped, under ``import tensorflow as tf``: ``tf.get_default_graph`` ->
``tf.compat.v1.get_default_graph``, ``tf.train.AdamOptimizer`` ->
``tf.compat.v1.train.AdamOptimizer``. A name is renamed when the installed TensorFlow lacks
it and ``tf.compat.v1`` has it (TensorFlow is imported for that, once); ``tf.contrib`` and
other names neither has are counted as missing."""

from __future__ import annotations

import functools

import libcst as cst

from crossgrad.tf1.upgrade import names


def tf_aliases(module: cst.Module) -> set[str]:
  """Names bound to the ``tensorflow`` module itself by the module's imports."""
  found = set()
  for statement in module.body:
    for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
      if isinstance(small, cst.Import):
        for alias in small.names:
          if names.dotted(alias.name) == "tensorflow":
            found.add(alias.asname.name.value if alias.asname else "tensorflow")
  return found


@functools.lru_cache(maxsize=None)
def _resolve(parts: tuple[str, ...]) -> bool:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  value = tf
  for part in parts:
    if not hasattr(value, part):
      return False
    value = getattr(value, part)
  return True


def renamed(node: cst.Attribute, aliases: set[str]) -> tuple[cst.BaseExpression, str] | None:
  """(``tf.compat.v1.<rest>``, the TF1 name) where ``node`` is a TF1 name TF2 dropped;
  (node, name) where neither has it; None where TF2 has it."""
  chain = names.dotted(node)
  root, _, rest = chain.partition(".")
  if root not in aliases or not rest:
    return None
  parts = tuple(rest.split("."))
  if _resolve(parts) or not _resolve(parts[:-1]):
    return None  # TF2 has it, or an inner name is the one missing (reported there).
  if parts[:2] == ("compat", "v1") or not _resolve(("compat", "v1", *parts)):
    return node, chain
  return cst.parse_expression(f"{root}.compat.v1.{rest}"), chain
