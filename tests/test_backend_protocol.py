"""The written backend protocol is enough to add a framework: a toy backend built from it
alone (tests/toy_backends.py) is cross-checked like the built-in ones, and a wrong one is caught."""

import ast
import collections.abc
import copy
import dataclasses
import pathlib

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.common import base, protocol
from crossgrad.checker import round_trips, selection
import toy_backends


class ToyHigherOrder(toy_backends.NumpyTwin):
  """The toy plus `protocol.HigherOrder`: forward mode by transposing the backward one
  output element at a time, a Python loop as its transformation; no second order."""

  TRANSFORMS = ("loop",)
  UNSUPPORTED_CHECKS = {("second_order", "eager"): "NumPy cannot differentiate the backward"}

  def __init__(self, tangent_scale=1.0, **kwargs):
    super().__init__(**kwargs)
    self.tangent_scale = tangent_scale

  def evaluate_higher_order(self, op, params, inputs, cotangent, tangents, direction, *,
                            device, mode):
    assert direction is None  # Declared unsupported.
    outputs, _ = self.evaluate(op, params, inputs, cotangent, device=device, mode=mode)
    out_tangents = []
    for k, out in enumerate(outputs):
      if not np.issubdtype(out.dtype, np.floating):
        out_tangents.append(None)
        continue
      column = np.zeros(out.size, out.dtype)
      for j in range(out.size):
        basis = [np.zeros_like(o) if np.issubdtype(o.dtype, np.floating) else None
                 for o in outputs]
        basis[k].flat[j] = 1
        _, cts = self.evaluate(op, params, inputs, basis, device=device, mode=mode)
        column[j] = sum(np.vdot(c, t) for c, t in zip(cts, tangents) if c is not None)
      out_tangents.append(column.reshape(out.shape) * self.tangent_scale)
    return tuple(out_tangents), None

  def evaluate_transformed(self, op, params, inputs, cotangent, *, device, transforms):
    results = [self.evaluate(op, params, [x[b] for x in inputs],
                             [None if c is None else c[b] for c in cotangent],
                             device=device, mode="eager") for b in range(len(inputs[0]))]
    stacked = tuple(tuple(None if parts[0] is None else np.stack(parts)
                          for parts in zip(*[r[i] for r in results])) for i in range(2))
    return {t: stacked for t in transforms}


@pytest.fixture
def toy():
  backends = []

  def add(kind=toy_backends.NumpyTwin, **kwargs):
    backends.append(base.register(kind(**kwargs)))
    return backends[-1]

  yield add
  for backend in backends:
    base.unregister(backend.NAME)


def test_builtin_backends_implement_the_protocol():
  for name in ("numpy", "tensorflow", "jax", "torch"):
    assert isinstance(base.load(name), protocol.Backend), name
  for name in ("tensorflow", "jax"):
    assert isinstance(base.load(name), protocol.HigherOrder), name


def _is_modes(value) -> bool:
  return isinstance(value, tuple) and all(isinstance(m, str) for m in value)


@pytest.mark.parametrize("name", ["numpy", "tensorflow", "jax", "torch"])
def test_every_backend_module_matches_the_protocol(name):
  """Required members present, every optional one of its declared type (the default's),
  unsupported checks naming higher-order checks in modes the backend has."""
  module = base.load(name)
  assert isinstance(module, protocol.Backend), name
  assert _is_modes(module.MODES) and module.MODES[0] == "eager"
  optional = protocol.capabilities(module)
  for field in dataclasses.fields(protocol.Capabilities):
    value, default = getattr(optional, field.name), getattr(protocol.Capabilities(), field.name)
    if field.name.isupper():
      assert isinstance(value, collections.abc.Mapping if isinstance(default, dict)
                        else type(default)), (name, field.name, value)
    else:
      assert value is None or callable(value), (name, field.name)
  assert _is_modes(optional.EXTRA_MODES) and _is_modes(optional.TRANSFORMS)
  for check, mode in optional.UNSUPPORTED_CHECKS:
    assert check in ("jvp", "second_order") and mode in module.MODES + optional.EXTRA_MODES
  assert (optional.evaluate_higher_order is None) == (not isinstance(module,
                                                                      protocol.HigherOrder))


def test_the_checker_reads_optional_members_only_through_the_protocol():
  """No checker module probes a backend for an optional member with ``getattr`` or
  ``hasattr`` and a default of its own: `protocol.capabilities` holds the defaults."""
  root = pathlib.Path(__file__).resolve().parent.parent / "checker"
  probes = []
  for path in root.rglob("*.py"):
    for node in ast.walk(ast.parse(path.read_text())):
      if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr")
          and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
          and node.args[1].value in protocol.OPTIONAL_MEMBERS):
        probes.append(f"{path.name}:{node.lineno}")
  assert not probes


def _constants(module) -> dict:
  names = [m for m in protocol.MEMBERS + protocol.OPTIONAL_MEMBERS if m.isupper()]
  return {m: copy.deepcopy(getattr(module, m)) for m in names if hasattr(module, m)}


def test_round_trips_join_through_an_api_not_by_changing_constants():
  """Loading backends for a check connects jax2tf to TensorFlow: the checker sees the mode
  and its unsupported forward mode, the backend module's constants stay as imported."""
  tensorflow = base.load("tensorflow")
  before = _constants(tensorflow)
  selection.backends(["tensorflow", "jax"])
  optional = round_trips.capabilities(tensorflow)
  assert "jax2tf" in optional.EXTRA_MODES and ("jvp", "jax2tf") in optional.UNSUPPORTED_CHECKS
  assert _constants(tensorflow) == before
  assert "jax2tf" not in protocol.capabilities(tensorflow).EXTRA_MODES


def test_toy_backend_cross_checks_green(toy):
  toy()
  assert "toy" in base.names()
  report = cg.cross_check(["leaky_relu", "custom_add", "center_loss"], backends=["toy"])
  assert report.ok, report.table(failures_only=True)
  checked = {(r.backend, r.check) for r in report.rows}
  assert {("toy", "forward"), ("toy", "vjp")} <= checked
  skipped = {r.note for r in report.rows if r.check == "skipped"
             and not r.note.startswith("variants the op does not take")}
  assert skipped == {"jvp: toy has no evaluate_higher_order",
                     "second_order: toy has no evaluate_higher_order"}


def test_toy_backend_with_higher_order_members(toy):
  toy(kind=ToyHigherOrder, name="toy_higher")
  report = cg.cross_check(["leaky_relu", "custom_add", "center_loss"],
                          backends=["toy_higher"])
  assert report.ok, report.table(failures_only=True)
  rows = [r for r in report.rows if r.backend == "toy_higher"]
  assert {(r.mode, r.check) for r in rows} == {
      ("eager", "forward"), ("eager", "vjp"), ("eager", "special"), ("eager", "jvp"),
      ("eager", "skipped"), ("loop", "forward"), ("loop", "vjp"), ("eager", "variant"),
      ("eager", "custom_rule"), ("loop", "custom_rule")}
  assert {r.note for r in rows if r.check == "skipped"} == {
      "second_order: NumPy cannot differentiate the backward"}


def test_a_wrong_forward_mode_fails_only_the_jvp_rows(toy):
  toy(kind=ToyHigherOrder, name="toy_wrong_jvp", tangent_scale=1.01)
  report = cg.cross_check(["leaky_relu", "custom_add"], backends=["toy_wrong_jvp"])
  assert {(r.op, r.check) for r in report.failures} == {
      ("leaky_relu", "jvp"), ("custom_add", "jvp")}


def test_a_wrong_toy_backend_fails_the_check(toy):
  toy(name="toy_wrong", gradient_scale=1.01)
  report = cg.cross_check(["leaky_relu"], backends=["toy_wrong"])
  failing = {(r.backend, r.check) for r in report.failures}
  assert failing == {("toy_wrong", "vjp"), ("toy_wrong", "special"), ("toy_wrong", "variant")}


def test_registering_an_incomplete_backend_names_what_is_missing():
  class Incomplete:
    NAME = "half"
    MODES = ("eager",)

  with pytest.raises(cg.CrossgradError, match="missing VERSION, xp, get"):
    base.register(Incomplete())
  assert "half" not in base.names()


def test_a_builtin_name_cannot_be_taken():
  with pytest.raises(cg.CrossgradError, match="built-in backend"):
    base.register(toy_backends.NumpyTwin(name="jax"))


class ToyArray:
  """An array type of the toy framework (NumPy inside)."""

  def __init__(self, values):
    self.values = np.asarray(values)


class ToyWithArrays(toy_backends.NumpyTwin):
  ARRAY_MODULES = (ToyArray.__module__,)


def test_a_registered_backend_claims_its_arrays(toy):
  import torch  # pylint: disable=g-import-not-at-top
  assert base.backend_of(np.ones(2), ToyArray([1.0])) == "numpy"  # Not registered yet.
  toy(kind=ToyWithArrays, name="toy_arrays")
  assert isinstance(base.load("toy_arrays"), protocol.Arrays)
  assert base.backend_of(np.ones(2), ToyArray([1.0])) == "toy_arrays"
  assert base.backend_of(torch.ones(2), ToyArray([1.0])) == "torch"  # The first claimed.
  assert base.backend_of(np.ones(2), 3.0) == "numpy"


@pytest.mark.parametrize("name", ["numpy", "tensorflow", "jax", "torch"])
def test_a_backend_keeps_no_reference_to_the_arrays_it_ran_on(name):
  """Backends keep compiled runners between calls (`base.compiled`); a runner that held
  the arrays of its first call would keep them for the life of the process (tens of
  megabytes in a check at a million elements)."""
  import gc  # pylint: disable=g-import-not-at-top
  import weakref  # pylint: disable=g-import-not-at-top
  module, op, rng = base.load(name), cg.get("leaky_relu"), np.random.default_rng(0)
  given = []

  def fresh(*shape):  # A strided view: JAX may alias (and keep) a contiguous array's memory.
    array = rng.standard_normal((*shape, 2))[..., 0]
    given.append(weakref.ref(array))
    return array

  for mode in module.MODES:
    module.evaluate(op, {}, [fresh(5)], [fresh(5)], device="cpu:0", mode=mode)
    unsupported = protocol.capabilities(module).UNSUPPORTED_CHECKS
    if isinstance(module, protocol.HigherOrder) and not {
        ("jvp", mode), ("second_order", mode)} <= unsupported.keys():
      module.evaluate_higher_order(op, {}, [fresh(5)], [fresh(5)], [fresh(5)], [fresh(5)],
                                   device="cpu:0", mode=mode)
  for transform in protocol.capabilities(module).TRANSFORMS:
    module.evaluate_transformed(op, {}, [fresh(2, 5)], [fresh(2, 5)], device="cpu:0",
                                transforms=[transform])
  gc.collect()
  assert len(given) > 1 and [ref() is not None for ref in given] == [False] * len(given)
