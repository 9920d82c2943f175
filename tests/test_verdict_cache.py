"""Remembered verdicts: a green op is checked again as soon as anything its key covers changes."""


from absl import flags
from absl.testing import flagsaver
import pytest

from crossgrad.checker import main
from crossgrad.checker import module_ops
from crossgrad.checker import verdict_cache
from crossgrad.registry import op_registry

_MODULE = """
import crossgrad as cg

SCALE = 3.0

def _helper(x):
  return SCALE * x

def forward(xp, x, *, shift=0.0):
  return _helper(x) + shift, ()

class _Gain:
  factor = 1.0

  def apply(self, g):
    return self.factor * g

GAIN = _Gain()

def backward(xp, residuals, g, *, shift=0.0):
  return (GAIN.apply(SCALE * g),)

def sample(rng):
  return (rng.standard_normal(4),)

cg.register(cg.OpDef("vc_triple", forward, backward, sample=sample,
                     param_sets=({"shift": 0.0}, {"shift": 1.0})))
cg.register_kernel("vc_triple", "jax", lambda x, shift=0.0: 3.0 * x + shift, name="vc_kernel")
"""
SELECTION = {"backends": ["jax"], "dtypes": ["float32"], "modes": None, "devices": ["all"],
             "impls": None, "tolerance": "default", "special": "advisory", "seed": 0}
EDITS = {
    "backward body": ("return (GAIN.apply(SCALE * g),)", "return (GAIN.apply(g * SCALE),)"),
    "a method of a helper class": ("return self.factor * g", "return g * self.factor"),
    "a class attribute": ("factor = 1.0", "factor = 1.5"),
    "helper": ("return SCALE * x", "return x * SCALE"),
    "module constant": ("SCALE = 3.0", "SCALE = 3.5"),
    "sample": ("rng.standard_normal(4)", "rng.standard_normal(5)"),
    "param set": ('{"shift": 1.0}', '{"shift": 2.0}'),
    "param default": ("def forward(xp, x, *, shift=0.0)", "def forward(xp, x, *, shift=0.5)"),
    "kernel": ("lambda x, shift=0.0: 3.0 * x", "lambda x, shift=0.0: 3.5 * x"),
}


def _key(path, selection=SELECTION):
  loaded = module_ops.load(str(path))
  try:
    return verdict_cache.op_key(op_registry.get("vc_triple"), selection)
  finally:
    module_ops.unload(loaded)


@pytest.fixture
def module_file(tmp_path):
  path = tmp_path / "vc_ops.py"
  path.write_text(_MODULE)
  return path


def test_the_same_definition_loaded_again_has_the_same_key(module_file):
  assert _key(module_file) == _key(module_file)


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_each_edit_of_the_definition_changes_the_key(module_file, edit):
  before = _key(module_file)
  old, new = EDITS[edit]
  assert old in _MODULE
  module_file.write_text(_MODULE.replace(old, new))
  assert _key(module_file) != before


@pytest.mark.parametrize("flag, value", [("dtypes", ["float64"]), ("modes", ["eager"]),
                                         ("backends", ["jax", "torch"]), ("seed", 1),
                                         ("tolerance", "bitwise"), ("devices", ["cpu"])])
def test_each_flag_changes_the_key(module_file, flag, value):
  assert _key(module_file, {**SELECTION, flag: value}) != _key(module_file)


def test_a_framework_version_changes_the_key(module_file, monkeypatch):
  before = _key(module_file)
  real = verdict_cache.importlib.metadata.version
  monkeypatch.setattr(verdict_cache.importlib.metadata, "version",
                      lambda name: "0.0.1.fake" if name == "jaxlib" else real(name))
  assert _key(module_file) != before
  assert _key(module_file, {**SELECTION, "backends": ["torch"]}) == _key(
      module_file, {**SELECTION, "backends": ["torch"]})  # jaxlib is not torch's.


def test_the_device_variables_change_the_key(module_file, monkeypatch):
  before = _key(module_file)
  monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
  assert _key(module_file) != before


def _main(capsys, path, cache, **flag_values):
  flags.FLAGS.mark_as_parsed()
  with flagsaver.flagsaver(**{"jobs": 1, "compile_cache": False, "backends": [],
                              "module": [str(path)], "cache_dir": str(cache),
                              **flag_values}):
    try:
      status = main.main(["crossgrad-check"])
    finally:
      if "vc_triple" in op_registry.names():
        op_registry.unregister("vc_triple")
  return status, capsys.readouterr().err


def test_a_green_op_is_remembered_a_red_one_never(tmp_path, capsys):
  path = tmp_path / "vc_run_ops.py"
  path.write_text(_MODULE.replace("cg.register_kernel", "# "))
  cache = tmp_path / "cache"
  status, err = _main(capsys, path, cache)
  assert status == 0 and "(cached)" not in err, err
  status, err = _main(capsys, path, cache)
  assert status == 0 and "1 op unchanged since their last green check (cached)" in err
  status, err = _main(capsys, path, cache, no_cache=True)
  assert status == 0 and "(cached)" not in err
  path.write_text(path.read_text().replace("return (GAIN.apply(SCALE * g),)",
                                           "return (GAIN.apply(2.0 * g),)"))
  for _ in range(2):  # Checked again after the edit; red, so never remembered.
    status, err = _main(capsys, path, cache)
    assert status == 1 and "(cached)" not in err
  entries = list((cache / verdict_cache.FOLDER).iterdir())
  assert len(entries) == 1 and entries[0].suffix == ".json"  # No temporary file left.


def test_an_unreadable_entry_is_checked_again(tmp_path):
  folder = tmp_path / "verdicts"
  folder.mkdir()
  (folder / "abc.json").write_text('{"rows": [')  # As a crash mid-write would leave it.
  assert verdict_cache.lookup(str(folder), "abc") is None
  assert not verdict_cache.store(str(folder), "def", [], {})  # Nothing green: not stored.
  assert not list(folder.glob("def*"))
