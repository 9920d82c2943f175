"""Registered kernels: `get` and ``impl=``, the op core's checks on a kernel's outputs, and
the cross-check of Pallas, Triton and TensorFlow kernels (correct ones green in every mode
they run; planted bugs caught). On CPU, Pallas runs interpreted and Triton under
``TRITON_INTERPRET=1`` (conftest), in a subprocess (`kernel_fixtures`): tiny arrays,
float32 only."""

import importlib.util
import os

import numpy as np
import pytest

import crossgrad as cg
import kernel_fixtures as kf
from crossgrad.examples import kernels as example

_FAST = dict(dtypes=["float32"], special=False)
_MAKERS = {"jax": (kf.pallas_kernel, kf.NO_FORWARD_MODE),
           "tensorflow": (kf.tensorflow_kernel, {}),
           "torch": (kf.triton_kernel, None)}


@pytest.fixture
def registered():
  """``register(backend, bug=None, name=...)``, every kernel unregistered afterwards."""
  made = []

  def register(backend, bug=None, name="k", fn=None, unsupported=None):
    maker, declared = _MAKERS.get(backend, (None, {}))
    declared = example.triton_unsupported() if declared is None else declared
    cg.register_kernel(kf.OP, backend, fn or maker(bug), name=name,
                       unsupported_modes=declared if unsupported is None else unsupported)
    made.append((backend, name))
  yield register
  for backend, name in made:
    cg.unregister_kernel(kf.OP, backend, name)


def _devices(backend):
  """Where a backend's kernel runs: Triton kernels on CPU tensors only when interpreted."""
  if backend == "torch" and os.environ.get("TRITON_INTERPRET") != "1":
    return "cuda"
  return "all"


def _kernel_rows(report, name="k"):
  return [row for row in report.rows if row.impl == name]


def test_get_returns_the_last_kernel_and_impl_picks(registered):
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  registered("jax", name="doubled", fn=lambda x, *, slope=0.1: jnp.where(x > 0, x, 2 * slope * x))
  registered("jax", name="right", fn=lambda x, *, slope=0.1: jnp.where(x > 0, x, slope * x))
  x = jnp.asarray([-1.0, 2.0])
  assert cg.jax.get(kf.OP).impl == "right"
  np.testing.assert_allclose(cg.jax.get(kf.OP, impl="doubled", slope=0.5)(x), [-1.0, 2.0])
  emitted = cg.jax.get(kf.OP, impl="emitted", slope=0.5)
  assert emitted.impl == "emitted" and hasattr(emitted, "primitive")
  np.testing.assert_allclose(emitted(x), [-0.5, 2.0])
  with pytest.raises(cg.CrossgradError, match="no such kernel"):
    cg.jax.get(kf.OP, impl="missing")
  cg.unregister_kernel(kf.OP, "jax", "right")
  assert cg.jax.get(kf.OP).impl == "doubled"
  cg.register_kernel(kf.OP, "jax", lambda x, *, slope=0.1: x, name="right")  # For teardown.


@pytest.mark.parametrize("result, message", [
    (lambda x: x[:2], "another shape"),
    (lambda x: x.astype("float16"), "another dtype"),
    (lambda x: (x, x), "another number of outputs")])
def test_kernel_outputs_get_the_op_core_checks(registered, result, message):
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  registered("jax", fn=lambda x, *, slope=0.1: result(x))
  with pytest.raises(cg.CrossgradError, match=message) as error:
    cg.jax.get(kf.OP)(jnp.ones(4, jnp.float32))
  assert kf.OP in str(error.value) and "jax" in str(error.value)


@pytest.mark.parametrize("backend", ["jax", "tensorflow", "torch"])
def test_correct_kernels_are_green_in_every_mode_they_run(registered, backend):
  if backend == "torch" and importlib.util.find_spec("triton") is None:
    pytest.fail("triton is not installed (the 'all' extra installs it)")
  if backend == "torch":
    report = kf.check_triton_in_subprocess(None, devices=_devices(backend))
  else:
    registered(backend)
    report = cg.cross_check(kf.OP, backends=[backend], impls=["k"], devices=_devices(backend),
                            **_FAST)
  rows = _kernel_rows(report)
  assert report.ok, report.table(failures_only=True)
  checked = {(row.mode, row.check) for row in rows if row.check != "skipped"}
  assert {("eager", "forward"), ("eager", "vjp")} <= checked
  assert {row.impl for row in report.rows if row.backend == backend} >= {"k"}
  skipped = [row.note for row in rows if row.check == "skipped"]
  if backend == "jax":  # Forward mode declared unsupported; vmap and jit ran.
    assert ("vmap", "vjp") in checked and ("jit", "vjp") in checked
    assert any("kernel 'k': a jax.custom_vjp kernel has no forward mode" in n for n in skipped)
  if backend == "torch":  # Compiled and vmapped rows are skipped, saying why.
    assert any("has no vmap rule" in n for n in skipped)
  if backend == "tensorflow":
    assert {("jit", "vjp"), ("eager", "jvp"), ("graph", "second_order")} <= checked


def _failing(report):
  return {(row.mode, row.check) for row in report.rows if not row.ok}


@pytest.mark.parametrize("backend, bug, wrong", [
    ("jax", "forward_constant", {("eager", "forward"), ("jit", "forward")}),
    ("jax", "backward", {("eager", "vjp"), ("jit", "vjp")}),
    ("jax", "tail", {("eager", "vjp"), ("jit", "vjp")}),
    ("jax", "jit_only", {("jit", "vjp")}),
    ("torch", "tail", {("eager", "vjp")}),
    ("tensorflow", "backward", {("eager", "vjp"), ("graph", "vjp"), ("jit", "vjp")}),
])
def test_planted_kernel_bugs_are_caught(registered, backend, bug, wrong):
  modes = {"jax": ["eager", "jit"], "torch": ["eager"], "tensorflow": ["eager", "graph", "jit"]}
  if backend == "torch":
    report = kf.check_triton_in_subprocess(bug, modes["torch"], _devices(backend))
  else:
    registered(backend, bug=bug)
    report = cg.cross_check(kf.OP, backends=[backend], modes=modes[backend],
                            devices=_devices(backend), **_FAST)
  assert not report.ok
  assert all(row.impl == "k" for row in report.failures)  # The emitted op stays green.
  failing = _failing(report)
  assert {f for f in failing if f[1] != "variant"} == wrong, report.table(failures_only=True)
  # The variant rows (eager and the first compiled mode) fail only where the sample's do.
  assert {m for m, check in failing if check == "variant"} <= {m for m, _ in wrong}


def test_impls_selects_and_json_names_the_implementation(registered):
  registered("tensorflow", bug="forward_constant")
  report = cg.cross_check(kf.OP, backends=["tensorflow"], modes=["eager"], impls=["emitted"],
                          **_FAST)
  assert report.ok and {row.impl for row in report.rows} == {"emitted"}
  report = cg.cross_check(kf.OP, backends=["tensorflow"], modes=["eager"], **_FAST)
  impls = {row["impl"] for row in report.to_dict()["rows"] if row["backend"] == "tensorflow"}
  assert impls == {"emitted", "k"}
  assert "tensorflow[k]" in report.table(failures_only=True)
  assert cg.Report.from_dict(report.to_dict()).rows == report.rows


def test_16_bit_kernels_are_judged_against_the_emitted_error(registered):
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top

  def in_float32(x, *, slope=0.1):  # Rounds once, as the emitted op does.
    wide = x.astype(jnp.float32)
    return jnp.where(wide > 0, wide, slope * wide).astype(x.dtype)
  registered("jax", name="wide", fn=in_float32)
  registered("jax", name="off", fn=lambda x, *, slope=0.1: jnp.where(x > 0, x, 2 * slope * x))
  report = cg.cross_check(kf.OP, backends=["jax"], modes=["eager"], dtypes=["bfloat16"],
                          special=False)
  rows = {(row.impl, row.check): row for row in report.rows if row.mode == "eager"}
  assert rows["wide", "forward"].ok and "16-bit kernel" in rows["wide", "forward"].note
  assert not rows["off", "forward"].ok
  assert rows["emitted", "forward"].ok


def test_kernel_cotangents_get_the_op_core_checks(registered):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  @jax.custom_vjp
  def half_gradient(x):
    return x

  half_gradient.defvjp(lambda x: (x, None), lambda _, g: (g.astype(jnp.float16),))
  registered("jax", fn=lambda x, *, slope=0.1: half_gradient(x), unsupported={"jvp": "vjp"})
  with pytest.raises(cg.CrossgradError, match="cotangent dtype differs") as error:
    jax.grad(lambda x: cg.jax.get(kf.OP)(x).sum())(jnp.ones(4, jnp.float32))
  assert "float16" in str(error.value) and "float32" in str(error.value)

  @tf.custom_gradient
  def short_gradient(x):
    return tf.identity(x), lambda g: g[:2]

  registered("tensorflow", fn=lambda x, *, slope=0.1: short_gradient(x))
  x = tf.ones(4)
  with tf.GradientTape() as tape, pytest.raises(cg.CrossgradError, match="cotangent shape"):
    tape.watch(x)
    tape.gradient(tf.reduce_sum(cg.tensorflow.get(kf.OP)(x)), x)


def test_keras_ops_use_the_backends_kernel(registered):
  import keras  # pylint: disable=g-import-not-at-top
  registered(keras.backend.backend(),
             fn=lambda x, *, slope=0.1: keras.ops.where(x > 0, x, 3 * slope * x))
  x = np.asarray([-1.0, 2.0], np.float32)
  np.testing.assert_allclose(keras.ops.convert_to_numpy(cg.keras.get(kf.OP)(x)), [-0.3, 2.0],
                             rtol=1e-6)


def test_a_torch_kernel_is_checked_under_torch_compile(registered):
  """A torch kernel (a plain `autograd.Function`, so it compiles on CPU as a Triton one does
  on a GPU) runs under ``torch.compile``: the output checks' NumPy reference is not traced,
  a correct kernel is green there and a planted backward bug is caught there."""
  import torch  # pylint: disable=g-import-not-at-top

  def launch(factor):
    return lambda x, g, slope: torch.where(x > 0, g, factor * slope * g)

  declared = {m: "not under test" for m in ("vmap", "jvp", "second_order")}
  correct = example.autograd_function(launch(1.0))
  wrong = example.autograd_function(lambda x, g, slope: (launch(1.0) if g is x else launch(3.0))(
      x, g, slope))  # The forward (g is x) is right, the backward's slope is 3 times too big.
  registered("torch", name="right", fn=correct, unsupported=declared)
  registered("torch", name="wrong", fn=wrong, unsupported=declared)
  report = cg.cross_check(kf.OP, backends=["torch"], impls=["right", "wrong"],
                          modes=["compile"], **_FAST)
  compiled = {(r.impl, r.check): r.ok for r in report.rows
              if r.mode == "compile" and r.check != "skipped"}
  assert compiled == {("right", "forward"): True, ("right", "vjp"): True,
                      ("wrong", "forward"): True, ("wrong", "vjp"): False,
                      ("right", "variant"): True, ("wrong", "variant"): False,
                      # A wrong rule is still the rule compile runs: scaled, it doubles.
                      ("right", "custom_rule"): True, ("wrong", "custom_rule"): True},\
      report.table()
  assert all(not r.ok for r in report.rows if (r.impl, r.check) == ("wrong", "variant"))
