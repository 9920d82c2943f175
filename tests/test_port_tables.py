"""Every entry of every crossgrad-port translation table against its framework.

Each example of an entry (`Entry.examples`) runs twice on the same random arrays
(`translate.EXAMPLE_ARRAYS`): through the framework itself, and translated
(`translate.example_sources`) and run with NumPy's ``xp``; values, shapes and dtype kinds
must agree. An entry with no example must refuse every call. A planted wrong entry
turns the check red.
"""

import math
import pathlib
import re

import numpy as np
import pytest
import torch

from crossgrad.api.numpy import xp
from crossgrad.port import translate
from crossgrad.port.tables import torch as torch_table


def _torch_eval(source, arrays):
  return eval(source, {"torch": torch, **{k: torch.tensor(v) for k, v in arrays.items()}})  # pylint: disable=eval-used


def _torch_value(value):
  if isinstance(value, torch.dtype):
    return str(value).removeprefix("torch.")
  if isinstance(value, torch.Tensor):
    return value.numpy()
  return value


# Table -> how to run an example in its framework, and to read a result back as NumPy.
FRAMEWORKS = {"torch": (torch_table.TABLE, _torch_eval, _torch_value)}


def _same(want, got, where):
  if isinstance(want, (tuple, list)):
    got = tuple(got)
    assert len(want) == len(got), where
    for w, g in zip(want, got):
      _same(w, g, where)
    return
  if isinstance(want, str):  # A dtype, by name.
    assert want == str(got), f"{where}: dtype {got}, framework {want}"
    return
  if hasattr(want, "eps"):  # finfo
    assert want.eps == got.eps, where
    return
  want, got = np.asarray(want), np.asarray(got)
  assert want.shape == got.shape, f"{where}: shape {got.shape}, framework {want.shape}"
  kinds = {want.dtype.kind, got.dtype.kind}
  assert len(kinds) == 1 or kinds <= set("iu"), f"{where}: dtype {got.dtype}, {want.dtype}"
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=where)


def check_entry(framework: str, table: translate.Table, key: str) -> int:
  """Runs every example of ``table.entries[key]``; how many ran."""
  _, run, read = FRAMEWORKS[framework]
  arrays = translate.EXAMPLE_ARRAYS(np.random.default_rng(0))
  for example in table.entries[key].examples:
    framework_call, source = translate.example_sources(table, key, example)
    namespace = {"math": math}
    exec(source, namespace)  # pylint: disable=exec-used
    fn = namespace["example"]
    names = fn.__code__.co_varnames[1:fn.__code__.co_argcount]
    got = fn(xp, *[arrays[n] for n in names])
    want = run(framework_call, arrays)
    want = tuple(map(read, want)) if isinstance(want, tuple) else read(want)
    _same(want, got, f"{key}: {framework_call} -> {source.splitlines()[-1].strip()}")
  return len(table.entries[key].examples)


ENTRIES = [(f, k) for f, (table, _, _) in FRAMEWORKS.items() for k in table.entries]


@pytest.mark.parametrize("framework, key", ENTRIES, ids=[f"{f}:{k}" for f, k in ENTRIES])
def test_entry_matches_its_framework(framework, key):
  table = FRAMEWORKS[framework][0]
  if not table.entries[key].examples:  # It must refuse: a call it cannot carry.
    with pytest.raises(translate.Refused):
      table.entries[key].render([translate.Arg("x", True)], {})
    return
  assert check_entry(framework, table, key) >= 1


def test_a_planted_wrong_entry_turns_red():
  table = torch_table.TABLE
  planted = dict(table.entries)
  planted["torch.expm1"] = translate.entry("input", "xp.exp({input})", examples=("x",))
  wrong = translate.Table(table.framework, table.roots, planted, constants=table.constants)
  assert check_entry("torch", table, "torch.expm1") == 1
  with pytest.raises(AssertionError, match="torch.expm1"):
    check_entry("torch", wrong, "torch.expm1")


def test_a_planted_wrong_default_turns_red():
  table = torch_table.TABLE
  planted = dict(table.entries)
  planted["Tensor.sum"] = translate.entry(  # keepdim's default flipped
      "input, dim=None, keepdim=True", "xp.sum({input}, axis={dim}, keepdims={keepdim})",
      examples=table.entries["Tensor.sum"].examples)
  wrong = translate.Table(table.framework, table.roots, planted, constants=table.constants)
  with pytest.raises(AssertionError, match="shape"):
    check_entry("torch", wrong, "Tensor.sum")


def _documented(row_label: str) -> set[str]:
  page = pathlib.Path(__file__).resolve().parent.parent / "docs" / "porting.md"
  row = next(line for line in page.read_text().splitlines()
             if line.startswith(f"| {row_label} |"))
  return set(re.findall(r"`([A-Za-z_0-9]+)`", row.split("|")[2]))


def test_the_docs_list_every_torch_entry():
  names = {"torch": set(), "Tensor": set(), "torch.nn.functional": set(),
           "torch.special": set()}
  for key, e in torch_table.TABLE.entries.items():
    if e.examples:  # Entries that refuse are not supported calls.
      group, _, name = key.rpartition(".")
      names[group].add(name)
  assert _documented("`torch`") == names["torch"]
  assert _documented("Tensor methods and attributes") - {"mul_"} == names["Tensor"]
  assert _documented("`torch.nn.functional`") == names["torch.nn.functional"]
  assert _documented("`torch.special`") == names["torch.special"]
