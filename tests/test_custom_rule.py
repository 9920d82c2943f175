"""``custom_rule`` rows: in every execution and transformation mode, the cotangents with the
op's backward (a kernel's own rule) scaled by 2 are twice the mode's own; a mode that
differentiates the forward instead (torch.compile of torch.func, a `tf.custom_gradient`
called with keyword arguments), or a kernel that bypasses its rule, fails the row naming
the mode, where the forward and vjp rows of an exact op cannot see it."""

import dataclasses

import numpy as np
import pytest
import torch

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.checker import round_trips
from crossgrad.checker.diagnosis import causes
from crossgrad.checker.rows import custom_rule
from crossgrad.registry import kernels

# torch first: in one pytest process, torch's eager jvp after JAX's and TF's checks raises
# "SystemError: AST constructor recursion depth mismatch" (Python 3.11), with or without
# these rows.
BACKENDS = ("torch", "jax", "tensorflow")


def _check(ops, backends, **kwargs):
  return cg.cross_check(ops, backends=list(backends), dtypes=["float64"], special=False,
                        variants="none", **kwargs)


def _custom_rows(report, **where):
  return [r for r in report.rows if r.check == "custom_rule"
          and all(getattr(r, k) == v for k, v in where.items())]


def test_the_sentinel_doubles_the_backwards_cotangents_only():
  op = cg.get("positive_matmul")
  sentinel = custom_rule.sentinel(op)
  numpy = base.load("numpy")
  rng = np.random.default_rng(0)
  x, w = op.sample(rng)
  g = rng.standard_normal(numpy.evaluate(op, {}, [x, w], [None], device="cpu:0",
                                         mode="eager")[0][0].shape)
  outs, cts = numpy.evaluate(op, {}, [x, w], [g], device="cpu:0", mode="eager")
  s_outs, s_cts = numpy.evaluate(sentinel, {}, [x, w], [g], device="cpu:0", mode="eager")
  assert sentinel.name == "positive_matmul.sentinel"
  assert custom_rule.sentinel(op) is sentinel  # One per op: compiled once per mode.
  np.testing.assert_array_equal(s_outs[0], outs[0])
  for ct, s_ct in zip(cts, s_cts):
    np.testing.assert_array_equal(s_ct, 2 * ct)


@pytest.mark.parametrize("backend", BACKENDS)
def test_built_in_ops_use_their_backward_in_every_mode(backend):
  module = base.load(backend)
  ops = ["leaky_relu"] if backend == "torch" else ["leaky_relu", "custom_add",
                                                   "bernoulli_mask"]
  report = _check(ops, [backend])
  assert report.ok, report.table(failures_only=True)
  settings = {(r.op, r.params) for r in report.rows if r.backend == backend}
  assert {op for op, _ in settings} == set(ops)
  for op, params in settings:
    rows = _custom_rows(report, op=op, params=params)
    assert sorted(r.mode for r in rows) == sorted(module.MODES + module.TRANSFORMS)
    assert all("the custom backward is used" in r.note for r in rows)


def _forward_in_jit(monkeypatch):
  """Plants JAX's jit mode differentiating the op's forward, its custom rule dropped."""
  from crossgrad.backends.jax import emitter, harness  # pylint: disable=g-import-not-at-top
  function = harness._function  # pylint: disable=protected-access

  def dropped(op, params, inputs, mode):
    if mode != "jit":
      return function(op, params, inputs, mode)
    return lambda *args: op.forward(emitter.xp, *args, **params)[0]
  monkeypatch.setattr(harness, "_function", dropped)


def test_a_mode_differentiating_the_forward_fails_the_row(monkeypatch):
  _forward_in_jit(monkeypatch)
  # A new op: nothing compiled before the plant is reused.
  op = dataclasses.replace(cg.get("leaky_relu"), name="test_custom_rule_leaky")
  report = _check([op], ["jax"])
  jit = _custom_rows(report, mode="jit")
  assert jit and all(not r.ok for r in jit)
  assert all("the custom backward is not used in jit" in r.note and "dx" in r.note
             for r in jit)
  assert all(r.ok for r in _custom_rows(report, mode="eager"))
  # The op is exact: its forward's derivative is its backward, so only this row sees it.
  assert all(r.ok for r in report.rows if r.check != "custom_rule")
  diagnosed = [r for r in causes.diagnose(report, [op]).failures]
  assert {(r.mode, r.diagnosis.kind) for r in diagnosed} == {("jit", "rule_not_used")}
  assert "differentiates the forward instead" in diagnosed[0].diagnosis.message


def test_torch_compile_of_torch_func_drops_the_custom_backward():
  # Dynamo traces the autograd.Function's forward inside torch.func as plain code
  # (pytorch#193279): only the custom_rule row sees it for an exact op.
  report = _check(["leaky_relu"], ["torch"], modes=["vmap", "compiled_vmap"])
  rows = {r.mode: r for r in _custom_rows(report, params="alpha=0.2")}
  assert rows["vmap"].ok, rows["vmap"].note
  assert not rows["compiled_vmap"].ok
  assert "the custom backward is not used in compiled_vmap" in rows["compiled_vmap"].note
  assert all(r.ok for r in report.rows if r.check != "custom_rule")
  diagnosed = causes.diagnose(report, [cg.get("leaky_relu")]).failures
  assert {(r.mode, r.diagnosis.kind) for r in diagnosed} == {("compiled_vmap",
                                                              "rule_not_used")}
  assert "pytorch#193279" in diagnosed[0].diagnosis.message


@pytest.mark.parametrize("backend", ["jax", "tensorflow"])
def test_export_round_trips_keep_the_custom_backward(backend):
  exports = list(round_trips.capabilities(base.load(backend)).EXTRA_MODES)
  report = _check(["leaky_relu"], [backend], modes=exports)
  assert report.ok, report.table(failures_only=True)
  rows = _custom_rows(report, params="alpha=0.2")
  assert sorted(r.mode for r in rows) == sorted(exports)
  assert all("the custom backward is used" in r.note for r in rows)


def _jax_leaky(bypass: bool):
  """A JAX kernel of leaky_relu under `jax.custom_vjp`; ``bypass``: it calls the
  undecorated function, so JAX differentiates the forward and the rule is dropped."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top

  @jax.custom_vjp
  def leaky(x, alpha):
    return jnp.where(x > 0, x, alpha * x)

  def fwd(x, alpha):
    return leaky(x, alpha), (x, alpha)

  def bwd(residuals, g):
    x, alpha = residuals
    return jnp.where(x > 0, g, alpha * g), None

  leaky.defvjp(fwd, bwd)
  if bypass:
    return lambda x, *, alpha=0.2: leaky.fun(x, alpha)
  return lambda x, *, alpha=0.2: leaky(x, alpha)


class _TorchLeaky(torch.autograd.Function):
  """A leaky ReLU at module level, as users write one: a kernel reaches it by its globals."""

  @staticmethod
  def forward(ctx, x, alpha):
    ctx.save_for_backward(x)
    ctx.alpha = alpha
    return torch.where(x > 0, x, alpha * x)

  @staticmethod
  def backward(ctx, g):
    (x,) = ctx.saved_tensors
    return torch.where(x > 0, g, ctx.alpha * g), None


def _tf_leaky():
  """A `tf.custom_gradient` leaky ReLU."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  @tf.custom_gradient
  def leaky(x, alpha):
    def grad(g):
      return tf.where(x > 0, g, alpha * g), None
    return tf.where(x > 0, x, alpha * x), grad
  return leaky


@pytest.fixture
def kernel():
  registered = []

  def register(backend, fn, name):
    cg.register_kernel("leaky_relu", backend, fn, name=name)
    registered.append((backend, name))
  yield register
  for backend, name in registered:
    cg.unregister_kernel("leaky_relu", backend, name)


def test_a_kernel_using_its_rule_passes_and_one_bypassing_it_fails(kernel):
  kernel("jax", _jax_leaky(bypass=False), "uses_rule")
  kernel("jax", _jax_leaky(bypass=True), "bypasses_rule")
  report = _check("leaky_relu", ["jax"], impls=["uses_rule", "bypasses_rule"])
  good, bad = (_custom_rows(report, impl=name, params="alpha=0.2")
               for name in ("uses_rule", "bypasses_rule"))
  module = base.load("jax")
  every = sorted(module.MODES + module.TRANSFORMS)
  assert sorted(r.mode for r in good) == sorted(r.mode for r in bad) == every
  assert all(r.ok for r in good), [r.note for r in good]
  assert all(not r.ok and "the custom backward is not used in" in r.note
             and r.mode in r.note and "kernel 'bypasses_rule'" in r.note for r in bad)
  assert not any(r.op.endswith(".sentinel") for r in report.rows)
  assert not kernels.kernels("leaky_relu.sentinel", "jax")  # Registered only while it runs.


def test_a_torch_function_kernel_passes(kernel):
  kernel("torch", lambda x, *, alpha=0.2: _TorchLeaky.apply(x, alpha), "function")
  report = _check("leaky_relu", ["torch"], impls=["function"], modes=["eager"])
  rows = _custom_rows(report, impl="function")
  assert rows and all(r.ok for r in rows), [r.note for r in rows]


def test_a_tf_custom_gradient_called_with_keywords_drops_its_rule(kernel):
  # Called with keyword arguments only, eager TF differentiates the forward instead
  # (tensorflow#65839); in a graph it raises, so that kernel declares the graph modes.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  leaky = _tf_leaky()
  kernel("tensorflow", lambda x, *, alpha=0.2: leaky(x, tf.constant(alpha, x.dtype)),
         "positional")
  cg.register_kernel("leaky_relu", "tensorflow", lambda x, *, alpha=0.2: leaky(
      x=x, alpha=tf.constant(alpha, x.dtype)), name="keywords", unsupported_modes={
          m: "tf.custom_gradient takes keywords only eagerly" for m in (
              "graph", "jit", "vectorized_map")})
  try:
    report = _check("leaky_relu", ["tensorflow"], impls=["positional", "keywords"])
  finally:
    cg.unregister_kernel("leaky_relu", "tensorflow", "keywords")
  good, bad = (_custom_rows(report, impl=name, params="alpha=0.2")
               for name in ("positional", "keywords"))
  assert sorted(r.mode for r in good) == ["eager", "graph", "jit", "vectorized_map"]
  assert all(r.ok for r in good), [r.note for r in good]
  assert [r.mode for r in bad] == ["eager"] and not bad[0].ok
  assert "the custom backward is not used in eager (kernel 'keywords'" in bad[0].note
  assert all(r.ok for r in report.rows if r.check != "custom_rule")


def test_a_kernel_without_a_reachable_rule_is_skipped_saying_why(kernel):
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  kernel("jax", lambda x, *, alpha=0.2: jnp.where(x > 0, x, alpha * x), "plain")
  report = _check("leaky_relu", ["jax"], impls=["plain"], modes=["eager"])
  assert report.ok
  skipped = [r for r in report.rows if r.check == "skipped" and "custom_rule" in r.note]
  assert skipped and all("cannot reach kernel 'plain'" in r.note for r in skipped)
  assert not _custom_rows(report)
