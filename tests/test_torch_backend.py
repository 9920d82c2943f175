"""The PyTorch backend: eager, vmap, forward mode, compile, double backward, Parameters,
devices. Expected values come from NumPy, JAX, finite differences or the adjoint identity,
never from torch itself. torch.compile is slow on two cores: few, small compiles."""

import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (crossgrad[torch])")

import crossgrad as cg  # pylint: disable=g-import-not-at-top,wrong-import-position
from crossgrad.backends.common import base, protocol  # pylint: disable=wrong-import-position
from crossgrad.registry import validation  # pylint: disable=wrong-import-position

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 5))
W = RNG.standard_normal((4, 5)) + 0.1  # Kinks of relu(w) stay away from w's values.
W += 0.2 * np.sign(W)


def _t(a, requires_grad=False):
  return torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad)


def test_torch_implements_the_protocol_and_is_a_default_backend():
  assert isinstance(base.load("torch"), protocol.Backend)
  assert "torch" in base.names() and "torch" in base.default_backends()
  assert cg.torch.MODES == ("eager", "compile")


def test_xp_has_the_standard_names_and_the_extensions():
  xp = cg.torch.xp
  for name in ("concat", "cumulative_sum", "permute_dims", "bitwise_left_shift", "astype",
               "take", "segment_sum", "segment_min", "one_hot", "unbroadcast"):
    assert callable(getattr(xp, name)), name
  assert xp.int32 is torch.int32 and xp.float64 is torch.float64
  ints = torch.tensor([3, 1, 2], dtype=torch.int32)
  # The standard: signed integers sum in the default integer dtype, unsigned in uint64
  # (as NumPy's own cumulative_sum and sum).
  for dtype, expected in ((torch.int32, torch.int64), (torch.uint8, torch.uint64),
                          (torch.float32, torch.float32)):
    out = xp.cumulative_sum(ints.to(dtype), axis=0)
    numpy_out = np.cumulative_sum(ints.numpy().astype(str(dtype).removeprefix("torch.")))
    assert out.dtype == expected and str(expected).endswith(numpy_out.dtype.name), dtype
    np.testing.assert_array_equal(out, [3, 4, 6])
  np.testing.assert_array_equal(xp.astype(xp.concat([ints, ints]), "float32"),
                                [3.0, 1.0, 2.0, 3.0, 1.0, 2.0])
  empty = xp.segment_min(torch.tensor([1.0, 2.0]), torch.tensor([0, 5]), 2)
  assert empty.tolist() == [1.0, np.finfo(np.float32).max]  # Id 5 dropped; segment 1 empty.
  with pytest.raises(cg.CrossgradError, match=r"xp\.concatenate is not in crossgrad's op "
                     r"namespace; the standard calls it concat"):
    xp.concatenate  # pylint: disable=pointless-statement


def test_eager_op_matches_the_reference_with_parameter_inputs():
  x, w = _t(X, True), torch.nn.Parameter(_t(W))
  y = cg.torch.get("positive_matmul")(x, w)
  g = RNG.standard_normal(y.shape)
  y.backward(_t(g))
  ref_y, vjp = cg.numpy.vjp("positive_matmul", X, W)
  dx, dw = vjp(g)
  np.testing.assert_allclose(y.detach().numpy(), ref_y, rtol=1e-12)
  np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-12)
  np.testing.assert_allclose(w.grad.numpy(), dw, rtol=1e-12)


def test_vmap_and_vmap_of_grad_match_per_example_results():
  op = cg.torch.get("positive_matmul")
  xs = RNG.standard_normal((3, 6, 5))
  ys = torch.func.vmap(op, in_dims=(0, None))(_t(xs), _t(W))
  grads = torch.func.vmap(torch.func.grad(lambda x, w: op(x, w).sum(), argnums=1),
                          in_dims=(0, None))(_t(xs), _t(W))
  for k in range(3):
    ref_y, vjp = cg.numpy.vjp("positive_matmul", xs[k], W)
    np.testing.assert_allclose(ys[k].numpy(), ref_y, rtol=1e-12)
    np.testing.assert_allclose(grads[k].numpy(), vjp(np.ones_like(ref_y))[1], rtol=1e-12)


def test_forward_mode_and_compile_on_the_same_op():
  """jvp (torch.func and forward_ad) is the transposed backward: <J t, g> = <t, J^T g>,
  and equals finite differences (the op is exact); compiled, the op gives eager's values."""
  op = cg.torch.get("positive_matmul")
  tx, tw = RNG.standard_normal(X.shape), RNG.standard_normal(W.shape)
  y, y_dot = torch.func.jvp(op, (_t(X), _t(W)), (_t(tx), _t(tw)))
  with torch.autograd.forward_ad.dual_level():
    dual = op(torch.autograd.forward_ad.make_dual(_t(X), _t(tx)),
              torch.autograd.forward_ad.make_dual(_t(W), _t(tw)))
    dual_tangent = torch.autograd.forward_ad.unpack_dual(dual).tangent
  g = RNG.standard_normal(y.shape)
  _, vjp = cg.numpy.vjp("positive_matmul", X, W)
  dx, dw = vjp(g)
  np.testing.assert_allclose(np.sum(y_dot.numpy() * g), np.sum(tx * dx) + np.sum(tw * dw),
                             rtol=1e-10)
  eps = 1e-6
  plus = cg.numpy.get("positive_matmul")(X + eps * tx, W + eps * tw)
  minus = cg.numpy.get("positive_matmul")(X - eps * tx, W - eps * tw)
  np.testing.assert_allclose(y_dot.numpy(), (plus - minus) / (2 * eps), atol=1e-7)
  np.testing.assert_allclose(dual_tangent.numpy(), y_dot.numpy(), rtol=1e-12)

  compiled = torch.compile(lambda x, w: op(x, w) * 2.0, fullgraph=True)
  x, w = _t(X, True), _t(W, True)
  out = compiled(x, w)
  out.backward(_t(g))
  np.testing.assert_allclose(out.detach().numpy(), 2.0 * y.numpy(), rtol=1e-12)
  np.testing.assert_allclose(x.grad.numpy(), 2.0 * dx, rtol=1e-12)
  np.testing.assert_allclose(w.grad.numpy(), 2.0 * dw, rtol=1e-12)



# Ops whose forward returns an input as-is or a view of it, with rules that are no view of
# the input's tangent: a gradient reversal layer (DANN) and a scaled flatten.
GRADIENT_REVERSAL = cg.OpDef(
    name="torch_gradient_reversal", forward=lambda xp, x: (x, ()),
    backward=lambda xp, r, g: (-0.5 * g,), gradient="surrogate",
    surrogate=lambda xp, x: -0.5 * x, sample=lambda rng: (rng.standard_normal((2, 3)),))
SCALED_FLATTEN = cg.OpDef(
    name="torch_scaled_flatten", forward=lambda xp, x: (xp.reshape(x, (-1,)), (x.shape,)),
    backward=lambda xp, r, g: (2.0 * xp.reshape(g, r[0]),), gradient="surrogate",
    surrogate=lambda xp, x: 2.0 * xp.reshape(x, (-1,)),
    sample=lambda rng: (rng.standard_normal((2, 3)),))


@pytest.mark.parametrize("op, tangent_of", [
    (GRADIENT_REVERSAL, lambda t: -0.5 * t), (SCALED_FLATTEN, lambda t: 2.0 * t.ravel())])
def test_an_op_returning_its_input_or_a_view_of_it_keeps_its_forward_mode_rule(op, tangent_of):
  """torch wants the tangent of an output that views an input to be a view of that input's
  tangent, which these rules are not: forward mode raised "the jvp is not returning a view",
  and the cross-check failed a correct gradient reversal. Under forward mode such an
  output is a copy; otherwise still the view, as a hand-written Function returns it."""
  fn = cg.torch.get(op)
  x, t = _t(X[:2, :3]), RNG.standard_normal((2, 3))
  with torch.autograd.forward_ad.dual_level():
    y, y_dot = torch.autograd.forward_ad.unpack_dual(
        fn(torch.autograd.forward_ad.make_dual(x, _t(t))))
  np.testing.assert_array_equal(y.numpy(), X[:2, :3].reshape(y.shape))
  np.testing.assert_allclose(y_dot.numpy(), tangent_of(t), rtol=1e-15)
  _, y_dot = torch.func.jvp(fn, (x,), (_t(t),))
  np.testing.assert_allclose(y_dot.numpy(), tangent_of(t), rtol=1e-15)
  assert fn(x)._base is x  # Reverse mode: no copy.
  report = cg.cross_check([op], backends=["torch"], dtypes=["float64"], modes=["eager"],
                          devices=["cpu"])
  assert report.ok, report.table(failures_only=True)
  assert {r.check for r in report.rows} >= {"vjp", "jvp", "second_order"}

def test_dynamo_refuses_the_function_with_jvp_hence_the_twin():
  full = cg.torch.get("leaky_relu").primitive.function
  with pytest.raises(Exception, match="Unsupported custom jvp"):
    torch.compile(lambda x: full.apply(x)[0], fullgraph=True)(_t(X, requires_grad=True))


@pytest.mark.parametrize("name", ["leaky_relu", "center_loss"])
def test_function_rules_close_over_what_every_dynamo_builds_without_a_source(name):
  """Dynamo traces an autograd.Function's rules without a source for their closures, and
  torch 2.11 builds only functions and constants there: a closed-over op core or bound
  method of it failed every compile row on torch 2.11 ("Unexpected type in sourceless
  builder"; seen on a GPU machine's torch 2.11.0, reproduced on the CPU build)."""
  import types  # pylint: disable=g-import-not-at-top
  function = cg.torch.get(name).primitive.compiled_function
  rules = [function.forward, function.backward, function.setup_context]
  seen, held = set(), []
  while rules:
    rule = rules.pop()
    if id(rule) in seen:
      continue
    seen.add(id(rule))
    for cell in rule.__closure__ or ():
      value = cell.cell_contents
      held.append(type(value))
      if isinstance(value, types.FunctionType):
        rules.append(value)
  assert held and set(held) <= {types.FunctionType, int, tuple, str}, held


LABELS = np.array([0, 2, 1, 2, 0], np.int32)
CENTERS = RNG.standard_normal((3, 5))


def _jax_second_order(name, inputs, vs, outer):
  """d/d(inputs) <grad of sum(outer(op)), v> in JAX (grad of grad through custom_vjp)."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  diff = cg.get(name).diff_argnums

  def target(*d):
    args = list(inputs)
    for i, a in zip(diff, d):
      args[i] = a
    return jnp.sum(outer(jnp, cg.jax.get(name)(*args)))

  def hvp(*d):
    grads = jax.grad(target, argnums=tuple(range(len(d))))(*d)
    return sum(jnp.vdot(gi, v) for gi, v in zip(grads, vs))

  with jax.enable_x64(True):
    return [np.asarray(e) for e in jax.grad(hvp, argnums=tuple(range(len(diff))))(
        *(jnp.asarray(inputs[i]) for i in diff))]


def _torch_second_order(name, inputs, vs, outer):
  diff = cg.get(name).diff_argnums
  args = [_t(a, True) if i in diff else torch.as_tensor(a) for i, a in enumerate(inputs)]
  d_args = [args[i] for i in diff]
  value = outer(torch, cg.torch.get(name)(*args)).sum()
  grads = torch.autograd.grad(value, d_args, create_graph=True)
  return torch.autograd.grad(sum((gi * _t(v)).sum() for gi, v in zip(grads, vs)), d_args)


@pytest.mark.parametrize("name, inputs, outer", [
    ("positive_matmul", (X, W), lambda m, y: m.sin(y)),
    ("center_loss", (X[:5], LABELS, CENTERS), lambda m, y: 3.0 * y),
])
def test_double_backward_matches_jax(name, inputs, outer):
  """Where JAX and torch mean the same second order (an exact op, or an upstream gradient
  that does not depend on the inputs), double backward equals JAX's grad of grad."""
  vs = [RNG.standard_normal(inputs[i].shape) for i in cg.get(name).diff_argnums]
  expected = _jax_second_order(name, inputs, vs, outer)
  got = _torch_second_order(name, inputs, vs, outer)
  assert any(np.abs(e).max() > 1e-3 for e in expected)  # There is a second order to see.
  for g, e in zip(got, expected):
    np.testing.assert_allclose(g.numpy(), e, rtol=1e-10, atol=1e-12)


def test_second_order_of_a_surrogate_op_applies_its_rule_at_every_order():
  """torch differentiates a Function's output by its backward at every order, as JAX's
  custom_jvp does (its tangent rule computes the outputs with the op itself). For
  center_loss under sin, the outer derivative of the loss L w.r.t. the centers is the rule:

    d/dc [cos(L) <B, v>] = -sin(L) dc_rule <B, v> + cos(L) d<B, v>/dc

  with B = (dx, dc) at g = 1 and dc_rule the paper's update (B's second half), not the
  true dL/dc (zero: L does not depend on c)."""
  inputs = (X[:5], LABELS, CENTERS)
  vx, vc = RNG.standard_normal(X[:5].shape), RNG.standard_normal(CENTERS.shape)
  got = _torch_second_order("center_loss", inputs, [vx, vc], lambda m, y: m.sin(y))
  loss, vjp = cg.numpy.vjp("center_loss", *inputs)
  dx, _, dc = vjp(np.float64(1.0))
  linear = _jax_second_order("center_loss", inputs, [vx, vc], lambda m, y: y)  # d<B,v>/d.
  inner = np.sum(dx * vx) + np.sum(dc * vc)
  by_hand = -np.sin(loss) * dc * inner + np.cos(loss) * linear[1]
  assert np.abs(np.sin(loss) * dc * inner).max() > 1e-3  # The rule's term is there to see.
  np.testing.assert_allclose(got[1].numpy(), by_hand, rtol=1e-10)
  jax_value = _jax_second_order("center_loss", inputs, [vx, vc], lambda m, y: m.sin(y))
  np.testing.assert_allclose(jax_value[1], by_hand, rtol=1e-10)


@pytest.mark.parametrize("labels, bad", [([0, 7], 7), ([-1, 2], -1), ([3, 0], 3)])
def test_label_values_are_checked_eagerly(labels, bad):
  """Out of [0, 3) on either side is an error naming the bad label; 0 and 2 pass."""
  with pytest.raises(cg.CrossgradError, match=rf"label out of range: .*, e\.g\. {bad}\. "):
    cg.torch.get("center_loss")(_t(X[:2]), torch.tensor(labels), _t(W[:3]))
  loss = cg.torch.get("center_loss")(_t(X[:2]), torch.tensor([0, 2]), _t(W[:3]))
  np.testing.assert_allclose(loss.item(), 0.5 * np.sum((X[:2] - W[[0, 2]]) ** 2))


@pytest.mark.parametrize("values, dtype", [
    ([3, -2, 7], torch.int32), ([3, -2, 7], torch.int64), ([5, 200, 0], torch.uint8),
    ([0.5, -1.5, 2.25], torch.float32), ([0.5, float("nan"), 2.25], torch.float64),
    ([0.5, -1.5, 2.25], torch.bfloat16),
    ([9, 4], torch.uint16), ([True, False], torch.bool)])  # aminmax has none: NumPy's.
def test_bounds_of_eager_tensors_are_numpys(values, dtype):
  x = torch.tensor(values).to(dtype)
  expected = np.asarray(x.float() if dtype == torch.bfloat16 else x)
  assert validation.concrete_bounds(x) == pytest.approx(
      (expected.min(), expected.max()), nan_ok=True)
  assert validation.concrete_bounds(x[:0]) is None


def test_bounds_are_unknown_under_compile():
  def bounded(x):
    return x * 2.0 if validation.concrete_bounds(x) is None else x * 3.0

  x = torch.tensor([-1.0, 2.0], requires_grad=True)
  np.testing.assert_array_equal(bounded(x).detach().numpy(), [-3.0, 6.0])
  compiled = torch.compile(bounded, fullgraph=True, backend="eager")
  np.testing.assert_array_equal(compiled(x).detach().numpy(), [-2.0, 4.0])


def test_cross_check_rows_for_eager_and_compile():
  """Compiled, forward mode and double backward cannot run: skipped rows with the reasons."""
  report = cg.cross_check(["positive_matmul"], backends=["torch"], dtypes=["float64"],
                          devices=["cpu"])  # A GPU's device rows are another test's.
  assert report.ok, report.table(failures_only=True)
  modes = {(r.mode, r.check) for r in report.rows if r.backend == "torch"}
  assert modes == {(m, c) for m in ("eager", "compile") for c in ("forward", "vjp", "special")
                   } | {("eager", "jvp"), ("eager", "second_order"), ("compile", "skipped"),
                        ("vmap", "forward"), ("vmap", "vjp"), ("batched_vjp", "forward"),
                        ("batched_vjp", "vjp"), ("eager", "variant"), ("compile", "variant"),
                        *((m, "custom_rule") for m in ("eager", "compile", "vmap",
                                                       "batched_vjp"))}
  notes = {r.note for r in report.rows if r.check == "skipped" and r.backend == "torch"}
  assert notes == {f"{kind}: {base.load('torch').UNSUPPORTED_CHECKS[(kind, 'compile')]}"
                   for kind in ("jvp", "second_order")}
  assert any("Unsupported custom jvp" in n for n in notes)
  assert any("does not currently support double backward" in n for n in notes)


def test_compiled_rows_at_more_sizes_than_dynamos_recompile_limit():
  """Each (op, input signature) compiles in a function of its own: one op checked at more
  sizes than Dynamo's recompile limit (a hard failure under fullgraph=True) stays green."""
  op = cg.OpDef(name="torch_many_sizes", forward=lambda xp, x: (x * x, (x,)),
                backward=lambda xp, r, g: (2.0 * r[0] * g,),
                sample=lambda rng: (rng.standard_normal(3),))
  torch_backend, limit = base.load("torch"), 2  # Dynamo's default is 8: the same, faster.
  with torch._dynamo.config.patch(recompile_limit=limit):  # pylint: disable=protected-access
    for n in range(1, limit + 3):
      x = np.linspace(-1.0, 1.0, n)
      outs, cts = torch_backend.evaluate(op, {}, [x], [np.ones(n)], mode="compile")
      np.testing.assert_allclose(outs[0], x * x)
      np.testing.assert_allclose(cts[0], 2.0 * x)


def test_a_wrong_torch_gradient_fails_the_cross_check():
  op = cg.OpDef(name="torch_only_wrong", forward=lambda xp, x: (2.0 * x, ()),
                backward=lambda xp, r, g: (g * (2.5 if xp.backend == "torch" else 2.0),),
                sample=lambda rng: (rng.standard_normal(3),))
  report = cg.cross_check([op], backends=["torch", "jax"], modes=["eager"])
  failing = {(r.backend, r.check) for r in report.failures}
  assert ("torch", "vjp") in failing and {b for b, _ in failing} == {"torch"}


def test_cpu_device_names():
  module = base.load("torch")
  try:
    module.set_cpu_device_count(3)
    assert module.devices()[:3] == ["cpu:0", "cpu:1", "cpu:2"]
    assert module.find_device("cpu:2") == torch.device("cpu")
    report = cg.cross_check(["leaky_relu"], backends=["torch"], dtypes=["float32"],
                            modes=["eager"], devices=["cpu"])  # Not a GPU's too.
    device_rows = [r for r in report.rows if r.check == "device"]
    assert report.ok and {r.device for r in device_rows} == {"cpu:1", "cpu:2"}
  finally:
    module.set_cpu_device_count(1)
  with pytest.raises(cg.CrossgradError, match="unknown device"):
    module.find_device("cpu:2")


def test_cuda_matches_cpu():
  if not torch.cuda.is_available():
    pytest.skip("no CUDA device here: the cuda:N rows run where one is")
  op = cg.get("sparse_q")
  inputs = op.sample(np.random.default_rng(1))
  cot = [np.ones((cg.numpy.get("sparse_q")(*inputs)).shape)]
  cpu = base.load("torch").evaluate(op, {}, inputs, cot, device="cpu:0")
  cuda = base.load("torch").evaluate(op, {}, inputs, cot, device="cuda:0")
  for a, b in zip(cpu[0] + cpu[1], cuda[0] + cuda[1]):
    if a is not None:
      np.testing.assert_allclose(b, a, rtol=1e-12)


def test_warm_up_probes_the_cpu_once_in_the_background_for_compile_only(monkeypatch):
  """`warm_up` runs Inductor's CPU probe (several seconds of C++ compiles on a cold cache)
  in a thread of its own, once, and only where compiled rows will run."""
  import threading  # pylint: disable=g-import-not-at-top
  from torch._inductor import cpu_vec_isa  # pylint: disable=g-import-not-at-top
  from crossgrad.backends.torch import emitter as module  # pylint: disable=g-import-not-at-top
  calls = []
  monkeypatch.setattr(module, "_WARM_UP", None)
  monkeypatch.setattr(cpu_vec_isa, "pick_vec_isa",
                      lambda: calls.append(threading.current_thread().name))
  module.warm_up(["eager"])
  assert module._WARM_UP is None and not calls  # pylint: disable=protected-access
  module.warm_up(["eager", "compile"])
  thread = module._WARM_UP  # pylint: disable=protected-access
  module.warm_up(["compile"])
  assert module._WARM_UP is thread  # pylint: disable=protected-access  # Once.
  thread.join()
  assert calls == ["crossgrad-inductor-probe"]
  assert isinstance(module, protocol.WarmUp)



def test_kernels_are_marked_for_dynamo_only_after_the_warm_up(monkeypatch):
  """Marking a kernel's reference shapes for Dynamo imports Dynamo, which must wait for the
  warm-up's import of Inductor: two threads importing them at once can deadlock."""
  import threading  # pylint: disable=g-import-not-at-top
  import torch._dynamo  # pylint: disable=g-import-not-at-top,unused-import  # Marking is instant.
  from crossgrad.backends.torch import emitter as module  # pylint: disable=g-import-not-at-top
  order, release = [], threading.Event()
  probe = threading.Thread(target=lambda: (release.wait(5), order.append("probe")))
  monkeypatch.setattr(module, "_WARM_UP", probe)
  probe.start()
  threading.Timer(0.2, release.set).start()
  core = module._CORE  # pylint: disable=protected-access
  marked = core.constant_at_trace(lambda: order.append("marked"))
  marked()
  assert order == ["probe", "marked"]

def _made_arrays_forward(xp, x):
  return x + xp.ones(x.shape, dtype=x.dtype) + xp.zeros(x.shape, dtype=x.dtype), ()


def _made_arrays_backward(xp, residuals, g):
  del residuals
  return (g * xp.ones(g.shape, dtype=g.dtype) + xp.full(g.shape, 0.0, dtype=g.dtype),)


MADE_ARRAYS = cg.OpDef(name="made_arrays", forward=_made_arrays_forward,
                       backward=_made_arrays_backward, sample=lambda rng: (rng.random(3),))


@pytest.mark.parametrize("compiled", [False, True])
def test_arrays_an_op_makes_land_on_its_inputs_device(compiled):
  """On a device other than the CPU (here `meta`, which any machine has), xp.zeros and
  the other creation functions make their arrays there, eagerly and under torch.compile,
  where the torch.device context manager used before failed every compile row on a GPU
  ("Dynamo does not know how to enter a `device` context manager"; seen on an H200).
  (Not xp.asarray of a number here: Dynamo makes that on `meta` as a constant it then
  refuses, which it does not do on a real device.)"""
  fn = cg.torch.get(MADE_ARRAYS)
  run = torch.compile(fn, fullgraph=True, backend="eager") if compiled else fn
  x = torch.empty(3, device="meta", requires_grad=True)
  y = run(x)
  (dx,) = torch.autograd.grad(y, x, torch.empty(3, device="meta"))
  assert y.device.type == dx.device.type == "meta"
  cpu = torch.arange(3.0, requires_grad=True)
  y = run(cpu)
  (dx,) = torch.autograd.grad(y, cpu, torch.full((3,), 2.0))
  np.testing.assert_array_equal(y.detach().numpy(), [1.0, 2.0, 3.0])
  np.testing.assert_array_equal(dx.numpy(), [2.0, 2.0, 2.0])


def test_making_new_ops_does_not_recompile_compiled_callers():
  """A compiled function that calls an op stays compiled when other ops are made later
  (a guard on the length of a list of op cores recompiled every caller per new op, and
  under fullgraph=True the ninth was a hard failure)."""
  fn = cg.torch.get("leaky_relu", alpha=0.3)
  compiled = torch.compile(lambda x: fn(x) * 2.0, fullgraph=True, backend="eager")
  x = torch.tensor([-1.0, 2.0])
  with torch._dynamo.config.patch(recompile_limit=1):  # pylint: disable=protected-access
    np.testing.assert_allclose(compiled(x).numpy(), [-0.6, 4.0], rtol=1e-6)
    for k in range(3):
      cg.torch.get(cg.OpDef(name=f"torch_new_op_{k}", forward=lambda xp, x: (x, ()),
                            backward=lambda xp, r, g: (g,),
                            sample=lambda rng: (rng.standard_normal(2),)))
      np.testing.assert_allclose(compiled(x).numpy(), [-0.6, 4.0], rtol=1e-6)


def test_eager_jax_value_checks_do_not_recompile_compiled_callers(monkeypatch):
  """A compiled function that checks values (`validation.concrete_values`) stays compiled
  while eager JAX code reads values between its calls, whichever backend registered its
  value reader first (JAX's, traced for a tensor, changed a global list: every such JAX
  call recompiled the caller, and the ninth recompile was a hard failure under
  fullgraph=True; CI: test_torch_bernoulli)."""
  jnp = pytest.importorskip("jax.numpy", reason="JAX is not installed (crossgrad[jax])")
  assert (cg.jax.NAME, cg.torch.NAME) == ("jax", "torch")  # Both readers are registered.
  readers = list(validation._VALUE_READERS)  # pylint: disable=protected-access
  for order in (readers, readers[::-1]):
    monkeypatch.setattr(validation, "_VALUE_READERS", order)
    torch._dynamo.reset()  # pylint: disable=protected-access  # Forgets the other order's.

    def checked_double(x):
      return x * 2.0 if validation.concrete_values(x) is None else x * 3.0

    compiled = torch.compile(checked_double, fullgraph=True, backend="eager")
    x = torch.tensor([-1.0, 2.0])
    with torch._dynamo.config.patch(recompile_limit=1):  # pylint: disable=protected-access
      for _ in range(3):
        np.testing.assert_array_equal(compiled(x).numpy(), [-2.0, 4.0])
        np.testing.assert_array_equal(validation.concrete_values(jnp.ones(2)), [1.0, 1.0])


def test_a_misuse_under_torch_compile_names_the_crossgrad_error():
  """An integer input to a differentiable argument, compiled: by default Dynamo runs the
  failing call eagerly and the CrossgradError itself reaches the caller; with
  fullgraph=True Dynamo lets no exception out of traced code, and its error names the
  CrossgradError and its problem (not that it could not build the error), and the
  force_eager stance shows the whole message."""
  fn = cg.torch.get("leaky_relu")
  x = torch.ones(3, dtype=torch.int32)
  with pytest.raises(cg.CrossgradError, match=r"op 'leaky_relu' \(torch\), input 'x': a "
                                              "differentiable input must be floating"):
    torch.compile(lambda x: fn(x) * 2.0, backend="eager")(x)
  torch.compiler.reset()
  full_graph = torch.compile(lambda x: fn(x) * 2.0, fullgraph=True, backend="eager")
  with pytest.raises(torch._dynamo.exc.Unsupported,  # pylint: disable=protected-access
                     match=r"CrossgradError\('a differentiable input must be floating'\)"):
    full_graph(x)
  with torch.compiler.set_stance("force_eager"), pytest.raises(
      cg.CrossgradError, match="got int32. Cast it"):  # What the docs say shows it whole.
    full_graph(x)


def test_the_dynamo_matmul_shim_leaves_a_dynamo_without_its_internals_alone(monkeypatch):
  """Where Dynamo lacks the module the shim builds on (torch 2.11: no object_protocol), it
  installs nothing rather than breaking Dynamo's own import."""
  from crossgrad.backends.torch import dynamo_matmul as torch_dynamo_matmul  # pylint: disable=g-import-not-at-top
  from torch._dynamo.variables import builtin  # pylint: disable=g-import-not-at-top
  monkeypatch.setitem(sys.modules, "torch._dynamo.variables.object_protocol", None)
  monkeypatch.delattr("torch._dynamo.variables.object_protocol", raising=False)
  before = builtin.BuiltinVariable.__dict__.get("call_matmul")
  assert torch_dynamo_matmul.install(type("Other", (), {})) is False
  assert builtin.BuiltinVariable.__dict__.get("call_matmul") is before


def test_cumulative_sums_compile_without_dynamo_warnings():
  """xp.cumulative_sum/prod with include_initial under torch.compile: the standard's values,
  and no warning from Dynamo (array_api_compat's versions look up a cached namespace)."""
  import warnings  # pylint: disable=g-import-not-at-top
  xp = cg.torch.xp

  def scans(x):
    return (xp.cumulative_sum(x, axis=0, include_initial=True),
            xp.cumulative_prod(x, axis=1, include_initial=True))

  x = torch.arange(1.0, 7.0).reshape(3, 2)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    total, product = torch.compile(scans, fullgraph=True, backend="eager")(x)  # Dynamo's part.
  assert not [w for w in caught if "Dynamo" in str(w.message)], [str(w.message) for w in caught]
  np.testing.assert_array_equal(total, np.concatenate([[[0, 0]], np.cumsum(x.numpy(), 0)]))
  np.testing.assert_array_equal(product, np.concatenate([[[1]] * 3, np.cumprod(x.numpy(), 1)], 1))
