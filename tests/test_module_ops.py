"""``--module`` without ``--ops`` checks the ops the module registers, and only those."""

import textwrap

from absl import flags
from absl.testing import flagsaver
import pytest

from crossgrad.checker import main
from crossgrad.checker import module_ops
from crossgrad.registry import kernels
from crossgrad.registry import op_registry

_OP = """
import crossgrad as cg
cg.register(cg.OpDef("{name}", lambda xp, x: (3.0 * x, ()), lambda xp, r, g: (3.0 * g,),
                     sample=lambda rng: (rng.standard_normal(4),)))
"""


def _main(capsys, **flag_values):
  flags.FLAGS.mark_as_parsed()
  with flagsaver.flagsaver(**{"jobs": 1, "compile_cache": False, "backends": [],
                              "json": None, **flag_values}):
    status = main.main(["crossgrad-check"])
  captured = capsys.readouterr()
  return status, captured.out, [l for l in captured.err.splitlines()
                                if l.startswith("[crossgrad]")]


@pytest.fixture
def user_module(tmp_path):
  path = tmp_path / "mo_user_ops.py"
  path.write_text(_OP.format(name="mo_triple"))
  yield path
  for name in ("mo_triple",):
    if name in op_registry.names():
      op_registry.unregister(name)


def test_module_without_ops_checks_only_its_ops(user_module, capsys, tmp_path):
  report = tmp_path / "report.json"
  status, out, _ = _main(capsys, module=[str(user_module)], json=str(report))
  assert status == 0, out
  import json  # pylint: disable=g-import-not-at-top
  rows = json.loads(report.read_text())["rows"]
  assert {r["op"] for r in rows} == {"mo_triple"}


def test_built_in_ops_only_when_named(user_module, capsys, tmp_path):
  report = tmp_path / "report.json"
  status, out, _ = _main(capsys, module=[str(user_module)], ops=["mo_triple", "leaky_relu"],
                         json=str(report))
  assert status == 0, out
  import json  # pylint: disable=g-import-not-at-top
  assert {r["op"] for r in json.loads(report.read_text())["rows"]} == {"mo_triple",
                                                                        "leaky_relu"}


def test_ops_all_means_every_registered_op(user_module):
  loaded = [module_ops.load(str(user_module))]
  assert module_ops.chosen(None, loaded) == ["mo_triple"]
  assert module_ops.chosen(["all"], loaded) is None  # selection.ops: every op.
  assert module_ops.chosen(["leaky_relu"], loaded) == ["leaky_relu"]
  assert module_ops.chosen(None, []) is None  # No --module: the full check, as before.


def test_module_registering_nothing_is_a_usage_error(tmp_path, capsys):
  path = tmp_path / "mo_empty.py"
  path.write_text("import crossgrad as cg\nSCALE = 3.0\n")
  status, _, lines = _main(capsys, module=[str(path)])
  assert status == 2
  assert len(lines) == 1 and "--module: the module registers no op" in lines[0], lines
  assert "cg.register(cg.OpDef" in lines[0]
  status, _, _ = _main(capsys, module=[str(path)], ops=["leaky_relu"], special="off")
  assert status == 0  # A helper module beside named ops is fine.


def test_kernels_module_selects_the_ops_it_gives_kernels(tmp_path):
  path = tmp_path / "mo_kernels.py"
  path.write_text(textwrap.dedent("""
      import crossgrad as cg
      cg.register_kernel("leaky_relu", "jax", lambda x, **p: x, name="mo_identity")
  """))
  loaded = module_ops.load(str(path))
  try:
    assert loaded.ops == ["leaky_relu"] and loaded.new_ops == []
  finally:
    module_ops.unload(loaded)
  assert not kernels.kernels("leaky_relu", "jax")
  assert "leaky_relu" in op_registry.names()  # Built-in: unloading leaves it.


def test_unload_then_load_registers_the_new_definition(user_module):
  loaded = module_ops.load(str(user_module))
  first = op_registry.get("mo_triple")
  module_ops.unload(loaded)
  assert "mo_triple" not in op_registry.names()
  user_module.write_text(_OP.format(name="mo_triple").replace("3.0", "4.0"))
  module_ops.load(str(user_module))
  assert not op_registry.get("mo_triple").same_definition(first)
