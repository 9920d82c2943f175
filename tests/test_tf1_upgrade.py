"""crossgrad-upgrade on TF1 programs in each idiom of docs/tf1.md's migration table: the
upgraded code parses, runs in TF2 eagerly and gives the legacy gradients (the original
run in a tf.compat.v1 graph, or the formula where the original registers fixed gradient
names, which one process cannot register twice); what it cannot rewrite is left and
reported; --port modules check green."""

import ast
import importlib.util
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

import legacy_programs
from crossgrad.tf1 import port_check
from crossgrad.tf1.upgrade import command
from crossgrad.tf1.upgrade import files
from crossgrad.tf1.upgrade.report import CHANGED, KEPT, LEFT

TESTDATA = pathlib.Path(__file__).parent / "testdata"
ROOT = pathlib.Path(__file__).resolve().parent.parent
RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((3, 4)).astype(np.float32)
G = RNG.standard_normal((3, 4)).astype(np.float32)


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory):
  """tests/testdata upgraded into a folder, with --port: (folder, report)."""
  out = tmp_path_factory.mktemp("upgraded") / "project"
  report = command.run(str(TESTDATA), str(out), port=True)
  return out, report


def _load(path, key=None):
  """An upgraded file as a module, once per process (some register gradient names)."""
  key = f"crossgrad_upgraded_{pathlib.Path(path).stem}"
  if key not in sys.modules:
    spec = importlib.util.spec_from_file_location(key, path)
    sys.modules[key] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules[key])
  return sys.modules[key]


def eager_vjp(build, inputs, cotangent):
  xs = [tf.constant(x) for x in inputs]
  with tf.GradientTape() as tape:
    tape.watch(xs)
    y = build(*xs)
  return y.numpy(), [g.numpy() for g in tape.gradient(y, xs, output_gradients=tf.constant(
      cotangent))]


def assert_same(got, want):
  (y, grads), (y0, grads0) = got, want
  np.testing.assert_allclose(y, y0, rtol=1e-5)
  for a, b in zip(grads, grads0):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# name -> (inputs, the build on a module). The original runs in a tf.compat.v1 graph.
GRAPH_ORACLE = {
    "upgrade_py_funcs.square": ([X], lambda m: m.square),
    "upgrade_py_funcs.tanh": ([X], lambda m: m.tanh),
    "upgrade_py_funcs.scaled_cube": ([X], lambda m: m.scaled_cube),
    "upgrade_py_funcs.low_plus_twice_high": ([X, Y], lambda m: m.low_plus_twice_high),
    "legacy_add.add_grad": ([X, Y, X], lambda m: lambda c, k, d: m.add_grad(
        c, k, d, tf.compat.v1.get_default_graph())[0]),
    "legacy_binarized.binary_dense": ([X, Y.T], lambda m: m.binary_dense),
    "legacy_dorefa.fw1": ([X], lambda m: lambda v: m.get_dorefa(1, 2)[0](v)),
    "legacy_dorefa.fw3": ([X], lambda m: lambda v: m.get_dorefa(3, 2)[0](v)),
    "legacy_defun.binarize_ste": ([X], lambda m: m.binarize_ste),
    "legacy_two_outputs.sort_pair": ([X, Y], lambda m: lambda a, b: m.sort_pair(a, b)[1]),
    "legacy_square_cube.mysquare": ([X], lambda m: m.mysquare),
}


@pytest.mark.parametrize("case", sorted(GRAPH_ORACLE))
def test_upgraded_programs_give_the_legacy_gradients_in_tf2(upgraded, case):
  name = case.split(".")[0]
  inputs, build = GRAPH_ORACLE[case]
  want = legacy_programs.graph_vjp(lambda *xs: build(legacy_programs.load(name))(*xs),
                                   inputs, G if case != "legacy_binarized.binary_dense"
                                   else G[:, :3])
  new = _load(upgraded[0] / f"{name}.py", f"upgraded_{name}")
  got = eager_vjp(build(new), inputs, G if case != "legacy_binarized.binary_dense"
                  else G[:, :3])
  assert_same(got, want)


def test_a_keras_layer_with_the_idiom_inline_trains_in_tf2(upgraded):
  new = _load(upgraded[0] / "upgrade_py_funcs.py", "upgraded_keras_layer")
  got = eager_vjp(new.NumpyCube(), [X], G)
  assert_same(got, (X ** 3, [3 * X ** 2 * G]))  # The legacy gradient, by its formula.


def test_fixed_names_and_tf1_names_upgrade(upgraded):
  """Gradients registered under fixed names (read op.inputs / op.outputs) and TF1 names
  under `import tensorflow as tf`; the oracle is each legacy gradient's formula."""
  new = _load(upgraded[0] / "upgrade_registered.py", "upgraded_registered")
  tanh = np.tanh(X)
  assert_same(eager_vjp(new.numpy_tanh, [X], G), (tanh, [G * (1 - tanh ** 2)]))
  assert_same(eager_vjp(new.half_relu, [X], G), (np.maximum(X, 0), [0.5 * G]))
  assert_same(eager_vjp(new.abs_ste, [X], G),
              (np.abs(X), [G * (np.abs(X) <= 1) * np.sign(np.abs(X))]))
  source = (upgraded[0] / "upgrade_registered.py").read_text()
  assert "tf.compat.v1.placeholder(" in source and "tf.placeholder" not in source
  assert "get_default_graph" not in source  # Its variables served only the override maps.


def test_gradient_reversal_and_guided_backprop_on_an_imported_graph(upgraded):
  new = _load(upgraded[0] / "upgrade_registered.py")
  assert_same(eager_vjp(lambda v: new.flip_gradient(v, 0.3), [X], G), (X, [-0.3 * G]))
  assert_same(eager_vjp(lambda v: new.flip_gradient(v, 2.0), [X], G), (X, [-2.0 * G]))
  w1, w2 = X.T, Y[:, :2]  # A frozen (4, 3) -> (3, 2) net.
  got = new.saliency(w1, w2, X, 1)
  upstream = np.broadcast_to(w2[:, 1], (3, 3))  # d logit_1 / d hidden, per example.
  guided = np.where((upstream > 0) & (X @ w1 > 0), upstream, 0)  # Positive and active.
  np.testing.assert_allclose(got, guided @ w1.T, rtol=1e-5, atol=1e-6)


def test_the_comparison_catches_a_wrong_gradient(upgraded):
  new = _load(upgraded[0] / "upgrade_registered.py", "upgraded_registered_planted")
  with pytest.raises(AssertionError):
    assert_same(eager_vjp(new.half_relu, [X], G), (np.maximum(X, 0), [G * (X > 0)]))


def test_every_finding_is_reported_and_what_cannot_be_rewritten_is_left(upgraded):
  out, report = upgraded
  left = [line for line in report.splitlines() if ": left: " in line]
  assert (out / "upgrade_left.py").read_text() == (TESTDATA / "upgrade_left.py").read_text()
  for reason in ("computed at run time", "Softplus", 'RegisterGradient("RegisteredElsewhere")',
                 "(shape_func)", "does not parse as Python 3"):
    assert any(reason in line for line in left), reason
  assert f"{out}/upgrade_py_funcs.py:\n" in report
  for path in out.glob("*.py"):  # Every file written parses; the Python 2 one is a copy.
    if path.name == "legacy_py2.py":
      assert path.read_text() == (TESTDATA / path.name).read_text()
    else:
      ast.parse(path.read_text(), str(path))


def test_formatting_and_comments_stay_and_a_second_run_changes_nothing(upgraded, tmp_path):
  source = (upgraded[0] / "upgrade_registered.py").read_text()
  assert "  with tf1.override_map({\"Relu\": \"UpgradeHalfGrad\"}):  # The ReLU passes half." \
      in source
  again = files.upgrade_file(str(upgraded[0] / "upgrade_registered.py"))
  assert again.source is None and not [e for e in again.entries if e.status == CHANGED]


def test_a_rewrite_that_does_not_parse_is_never_written(monkeypatch, tmp_path):
  broken = types.SimpleNamespace(code="def (:\n")
  monkeypatch.setattr(files.transformer, "upgrade_module",
                      lambda path, module: (broken, [], set(), True))
  result = files.upgrade_file(str(TESTDATA / "legacy_binarized.py"))
  assert result.source is None
  assert [e.status for e in result.entries] == [LEFT]
  assert "did not parse" in result.entries[0].what


def test_call_sites_of_a_rewritten_helper_are_kept(upgraded):
  report = upgraded[1]
  assert "line 32: kept: calls py_func, which now runs crossgrad.tf1.py_func" in report
  assert "line 28: left: the helper it calls was not rewritten" in report  # No definition.


@pytest.fixture(name="ports", scope="module")
def _ports(upgraded):
  """The written ports module, loaded once (loading registers its ops); its ops are
  unregistered after this file's tests, so no later test in the process sees them."""
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  before = set(cg.names())
  yield _load(upgraded[0] / "upgrade_registered_ports.py")
  for name in set(cg.names()) - before:
    cg.unregister(name)


def test_ports_are_written_with_a_check_command_per_op(upgraded, ports):
  out, report = upgraded
  assert {op.name for op in vars(ports).values() if hasattr(op, "backward")} == {
      "upgrade_registered_relu_upgradehalfgrad", "upgrade_registered_abs_ste",
      "upgrade_registered_tanh", "upgrade_registered_relu_upgradeguidedrelu"}
  assert (f"check: python -m crossgrad.check --module={out}/upgrade_registered_ports.py "
          "--ops=upgrade_registered_abs_ste") in report
  assert (f"check: python -m crossgrad.tf1.port_check --module={out}/legacy_add.py "
          "--forward=forward_func --grad=backprop_func") in report


def test_native_ports_cross_check_green(ports):
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  report = cg.cross_check([ports.UPGRADE_REGISTERED_ABS_STE,
                           ports.UPGRADE_REGISTERED_RELU_UPGRADEGUIDEDRELU],
                          backends=["numpy", "tensorflow", "jax"], dtypes=["float64"],
                          special=False)  # TF and JAX are where ports run; float32 is slower.
  assert report.ok, report


def test_a_py_func_port_agrees_with_the_legacy_graph(upgraded):
  new = _load(upgraded[0] / "legacy_two_outputs.py", "upgraded_two_outputs_port")
  rows = port_check.compare(new.sorted_pair, new.sorted_pair_grad, [X, Y], [G, Y],
                            num_outputs=2, input_names=["a", "b"])
  assert rows and all(r["ok"] for r in rows)


def _cli(*args):
  return subprocess.run([sys.executable, "-m", "crossgrad.tf1.upgrade", *args],
                        capture_output=True, text=True, timeout=120, cwd=ROOT.parent,
                        check=False)


def test_usage_errors_exit_2(tmp_path):
  missing = _cli(str(tmp_path / "nope.py"), str(tmp_path / "out.py"))
  assert missing.returncode == 2 and "no such file" in missing.stderr
  both = _cli(str(TESTDATA), str(tmp_path / "out"), "--in_place")
  assert both.returncode == 2 and "--in_place" in both.stderr
  (tmp_path / "file.py").write_text("x = 1\n")
  mixed = _cli(str(TESTDATA), str(tmp_path / "file.py"))
  assert mixed.returncode == 2 and "both be files or both be folders" in mixed.stderr
  assert _cli("--no_such_flag").returncode == 2


def test_a_surrogate_port_is_told_to_declare_its_gradient():
  from crossgrad import tf1  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  with pytest.raises(cg.CrossgradError, match=r"Write tf1.port\('old_ste', ..., "
                     r"gradient=\"declared\"\)") as raised:
    tf1.port("old_ste", "Sign", "Identity", gradient="surrogate", register=False)
  assert "argument 'gradient'" in str(raised.value) or "gradient:" in str(raised.value)
  assert tf1.port("old_ste", "Sign", "Identity", gradient="declared",
                  register=False).gradient == "declared"


def test_a_multi_line_py_func_keeps_one_argument_a_line(tmp_path):
  path = tmp_path / "helper.py"
  path.write_text(
      "import tensorflow.compat.v1 as tf\n\n\ndef helper(func, inp, Tout, grad):\n"
      "  name = 'G%d' % id(func)\n  tf.RegisterGradient(name)(grad)\n"
      "  with tf.name_scope('x'), tf.get_default_graph().gradient_override_map(\n"
      "      {'PyFunc': name}):\n    out = tf.py_func(\n        func,\n        inp,\n"
      "        Tout,\n    )\n  return out\n")
  result = files.upgrade_file(str(path))
  assert result.source.endswith(
      "  with tf.name_scope('x'):\n    out = tf1.py_func(\n        func,\n        inp,\n"
      "        Tout,\n        grad=grad,\n    )\n  return out\n")
