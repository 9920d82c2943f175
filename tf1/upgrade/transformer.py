"""One file's upgrade: TF1 names TF2 dropped renamed (`compat_names`), then each idiom
`crossgrad.tf1.scan` finds rewritten by its module (`py_funcs`, `override_maps`, `defuns`),
the crossgrad import added, and the result parsed before it is accepted. Renames keep
every line where it was, so report lines are the original file's."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from crossgrad.tf1.upgrade import compat_names
from crossgrad.tf1.upgrade import defuns
from crossgrad.tf1.upgrade import names
from crossgrad.tf1.upgrade import override_maps
from crossgrad.tf1.upgrade import py_funcs
from crossgrad.tf1.upgrade.report import CHANGED, Entry, LEFT


class _Renamer(cst.CSTTransformer):
  METADATA_DEPENDENCIES = (PositionProvider,)

  def __init__(self, path: str, aliases: set[str]):
    super().__init__()
    self.path, self.aliases, self.entries = path, aliases, []

  def leave_Attribute(self, original, updated):
    result = compat_names.renamed(updated, self.aliases)
    if result is None:
      return updated
    line = self.get_metadata(PositionProvider, original).start.line
    new, name = result
    if new is updated:
      self.entries.append(Entry(self.path, line, LEFT, f"{name}: in neither TF2 nor "
                                "tf.compat.v1 (tf_upgrade_v2 lists its replacement)"))
      return updated
    self.entries.append(Entry(self.path, line, CHANGED, f"{name} -> {names.code(new)}"))
    return new


_GRAPH_GETTER = m.Call(func=m.Attribute(attr=m.Name("get_default_graph")) | m.Name(
    "get_default_graph"))


class _Idioms(cst.CSTTransformer):
  METADATA_DEPENDENCIES = (PositionProvider,)

  def __init__(self, path: str, alias: str, module_regs):
    super().__init__()
    self.path, self.alias, self.module_regs = path, alias, module_regs
    self.entries: list[Entry] = []
    self.helpers: set[str] = set()  # Functions whose py_func blocks were rewritten.
    self._plans: dict[int, list[py_funcs.Block]] = {}
    self._graphs: set[str] = set()  # Variables the rewritten override maps were called on.
    self.used = False

  def line(self, node: cst.CSTNode) -> int:
    return self.get_metadata(PositionProvider, node).start.line

  def visit_FunctionDef(self, node):
    blocks, entries = py_funcs.plan(node, self.line, self.path, self.module_regs)
    self.entries += entries
    if blocks:
      self._plans[id(node)] = blocks

  def leave_FunctionDef(self, original, updated):
    blocks = self._plans.pop(id(original), None)
    if blocks:
      self.used = True
      self.helpers.add(original.name.value)
      updated = py_funcs.apply(updated, blocks, self.alias)
    # `g = tf.get_default_graph()` that only served a rewritten override map goes.
    return py_funcs.drop_unused(updated, self._graphs, _GRAPH_GETTER)

  def leave_Call(self, original, updated):
    if override_maps.is_override(updated):
      new, what = override_maps.rewrite(updated, self.alias)
    elif defuns.is_defun(updated):
      new, what = defuns.rewrite(updated, self.alias)
    else:
      return updated
    if what:
      self.entries.append(Entry(self.path, self.line(original),
                                LEFT if new is None else CHANGED, what))
    if new is None:
      return updated
    self.used = True
    if isinstance(updated.func, cst.Attribute) and isinstance(updated.func.value, cst.Name):
      self._graphs.add(updated.func.value.value)
    return new


def crossgrad_alias(module: cst.Module) -> tuple[str, bool]:
  """(the name to call crossgrad.tf1 by, whether an import must be added)."""
  for small in m.findall(module, m.ImportFrom(module=m.Name("crossgrad"))):
    for alias in small.names if not isinstance(small.names, cst.ImportStar) else ():
      if alias.name.value == "tf1":
        return (alias.asname.name.value if alias.asname else "tf1"), False
  taken = {n.value for n in m.findall(module, m.Name())}
  return ("tf1" if "tf1" not in taken else "crossgrad_tf1"), True


def upgrade_module(path: str, module: cst.Module) -> tuple[cst.Module, list[Entry], set[str],
                                                           bool]:
  """(the upgraded module, entries, helpers rewritten, whether an idiom changed)."""
  aliases = compat_names.tf_aliases(module)
  entries = []
  if aliases:
    renamer = _Renamer(path, aliases)
    module = MetadataWrapper(module).visit(renamer)
    entries += renamer.entries
  alias, add_import = crossgrad_alias(module)
  idioms = _Idioms(path, alias, py_funcs.module_registrations(module))
  module = MetadataWrapper(module).visit(idioms)
  entries += idioms.entries
  if idioms.used and add_import:
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, "crossgrad", "tf1",
                                        asname=None if alias == "tf1" else alias)
    module = AddImportsVisitor(context).transform_module(module)
  return module, entries, idioms.helpers, idioms.used
