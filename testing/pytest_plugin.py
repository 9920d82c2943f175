"""crossgrad's pytest plugin: ``pytest --crossgrad=my_ops.py`` collects one item per op the
module registers (``my_ops.py::crossgrad[op_name]``), each failing with the causes of its red
rows (`crossgrad.testing.failure_text`). Registered through the ``pytest11`` entry point
(``-p crossgrad.testing.pytest_plugin`` without an install). ``--crossgrad-backends`` and
the other ``--crossgrad-*`` options narrow the check as the binary's flags do.
"""

from __future__ import annotations

import pathlib

import pytest

from crossgrad import testing
from crossgrad.checker import module_ops
from crossgrad.registry import op_registry

# Option -> (cross_check argument, how the value is read): lists are comma-separated.
_LISTS = ("backends", "dtypes", "modes", "devices", "impls")
_OPTIONS = {**{name: name for name in _LISTS}, "tolerance": "tolerance", "special": "special",
            "seed": "seed"}


def pytest_addoption(parser):
  group = parser.getgroup("crossgrad", "cross-checks of custom-gradient ops")
  group.addoption("--crossgrad", action="append", default=[], metavar="FILE",
                  help="a .py file (or dotted module) registering ops: one test item per "
                       "op it registers (repeatable)")
  for name in _LISTS:
    group.addoption(f"--crossgrad-{name}", default=None, metavar="A,B",
                    help=f"the check's {name}, comma-separated, as --{name} of "
                         "python -m crossgrad.check (default: the check's)")
  group.addoption("--crossgrad-tolerance", default=None, help="as --tolerance")
  group.addoption("--crossgrad-special", default=None, help="as --special")
  group.addoption("--crossgrad-seed", default=0, type=int, help="as --seed")


def _wanted(config) -> list[pathlib.Path]:
  return [pathlib.Path(p).resolve() for p in config.getoption("crossgrad")]


def _selection(config) -> dict:
  chosen = {}
  for option, argument in _OPTIONS.items():
    value = config.getoption(f"crossgrad_{option}")
    if value is None:
      continue
    chosen[argument] = ([v for v in value.split(",") if v] if option in _LISTS else value)
  if "special" in chosen:
    chosen["special"] = {"off": False, "false": False, "true": True}.get(
        chosen["special"], chosen["special"])
  return chosen


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
  """Adds each --crossgrad file that the arguments do not already reach to what pytest
  collects (a file pytest walks over anyway is collected there, once)."""
  given = [pathlib.Path(a.split("::")[0]).resolve() for a in config.args]
  for path, spec in zip(_wanted(config), config.getoption("crossgrad")):
    if not any(path == g or g in path.parents for g in given):
      config.args.append(spec)


def pytest_collect_file(file_path, parent):
  if pathlib.Path(file_path).resolve() in _wanted(parent.config):
    return CrossgradFile.from_parent(parent, path=file_path)
  return None


class CrossgradFile(pytest.File):
  """The module: imported once, one item per op it registers."""

  def collect(self):
    loaded = module_ops.load(str(self.path))
    if not loaded.ops:
      raise module_ops.registers_nothing(str(self.path))
    for name in loaded.ops:
      yield CrossgradItem.from_parent(self, name=f"crossgrad[{name}]", op=name)


class CrossgradFailure(Exception):
  """A red op: its text is the diagnosed failing rows."""


class CrossgradItem(pytest.Item):
  """One op's cross-check."""

  def __init__(self, *, op: str, **kwargs):
    super().__init__(**kwargs)
    self.op = op

  def runtest(self):
    try:
      testing.assert_cross_check([op_registry.get(self.op)], **_selection(self.config))
    except AssertionError as e:
      raise CrossgradFailure(str(e)) from None

  def repr_failure(self, excinfo, style=None):
    if isinstance(excinfo.value, CrossgradFailure):
      return f"crossgrad cross-check of {self.op}:\n{excinfo.value}"
    return super().repr_failure(excinfo, style=style)

  def reportinfo(self):
    return self.path, None, f"crossgrad[{self.op}]"
