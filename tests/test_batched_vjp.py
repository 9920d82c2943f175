"""The ``batched_vjp`` mode: the VJP at the sample of a batch of cotangents (``vmap`` of one
VJP function) against the reference's VJP looped over them; a kernel whose backward's vmap
rule is wrong only for an unbatched saved input is caught there alone."""

import numpy as np
import pytest

import crossgrad as cg
import kernel_fixtures as kf

_FAST = dict(dtypes=["float32"], special=False, variants="none")


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_harness_matches_the_loop(backend):
  op = cg.get("center_loss")
  rng = np.random.default_rng(4)
  x = op.sample(rng)
  cts = rng.standard_normal((3,))
  from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
  module = base.load(backend)
  got = module.evaluate_transformed(op, {}, [np.stack([a, a]) for a in x], [cts[:2]],
                                    transforms=["batched_vjp"], cotangents=[cts])
  outs, grads = got["batched_vjp"]
  out, vjp_fn = cg.numpy.vjp(op, *x)
  np.testing.assert_allclose(outs[0], out, rtol=1e-5)
  for k, c in enumerate(cts):
    dx, _, dc = vjp_fn(np.asarray(c, out.dtype))
    np.testing.assert_allclose(grads[0][k], dx, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads[2][k], dc, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_built_in_ops_are_green(backend):
  report = cg.cross_check(["ste_quantize", "center_loss", "submanifold_q"], backends=[backend],
                          modes=["batched_vjp"], **_FAST)
  assert report.ok, report.table(failures_only=True)
  assert {(r.mode, r.check) for r in report.rows if r.backend == backend} == {
      ("batched_vjp", "forward"), ("batched_vjp", "vjp"), ("batched_vjp", "custom_rule")}


def _torch_kernel(wrong):
  """An autograd.Function (setup_context, generated vmap rule) whose backward is a custom
  op with a hand-written vmap rule; ``wrong``: the rule says its result is batched only
  where x is (a batched cotangent with an unbatched saved x is then summed over)."""
  import torch  # pylint: disable=g-import-not-at-top
  name = f"cgtest::leaky_backward_{'wrong' if wrong else 'right'}"

  @torch.library.custom_op(name, mutates_args=())
  def leaky_backward(x: torch.Tensor, g: torch.Tensor, slope: float) -> torch.Tensor:
    return torch.where(x > 0, g, slope * g)

  @leaky_backward.register_fake
  def _(x, g, slope):
    del slope
    return torch.empty_like(torch.broadcast_tensors(x, g)[0])

  def rule(info, in_dims, x, g, slope):
    del info
    x_dim, g_dim = in_dims[:2]  # slope: None
    x = x if x_dim is None else x.movedim(x_dim, 0)
    g = g if g_dim is None else g.movedim(g_dim, 0)
    return leaky_backward(x, g, slope), (x_dim if wrong else 0)
  leaky_backward.register_vmap(rule)

  class Leaky(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, slope):
      return torch.where(x > 0, x, slope * x)

    @staticmethod
    def setup_context(ctx, inputs, output):
      del output
      ctx.save_for_backward(inputs[0])
      ctx.slope = inputs[1]

    @staticmethod
    def backward(ctx, g):
      (x,) = ctx.saved_tensors
      return leaky_backward(x, g, ctx.slope), None

  return lambda x, *, slope=0.1: Leaky.apply(x, slope)


def _jax_kernel(wrong):
  """A jax.custom_vjp whose backward's custom_vmap rule (``wrong``) says its result is
  batched only where x is."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top

  def make(slope):
    @jax.custom_batching.custom_vmap
    def leaky_backward(x, g):
      return jnp.where(x > 0, g, slope * g)

    @leaky_backward.def_vmap
    def rule(axis_size, in_batched, x, g):
      del axis_size
      return leaky_backward(x, g), (in_batched[0] if wrong else any(in_batched))

    @jax.custom_vjp
    def leaky(x):
      return jnp.where(x > 0, x, slope * x)
    leaky.defvjp(lambda x: (leaky(x), x), lambda x, g: (leaky_backward(x, g),))
    return leaky
  return lambda x, *, slope=0.1: make(slope)(x)


_UNSUPPORTED = {"jvp": "no forward-mode rule", "second_order": "backward not differentiable",
                "compile": "Dynamo cannot trace this test's custom op (sourceless builder)"}


@pytest.mark.parametrize("backend, make, note", [
    ("torch", _torch_kernel, "dx"),
    ("jax", _jax_kernel, "bwd rule must produce an output with the same type")])
def test_a_vmap_rule_wrong_for_an_unbatched_input_fails_only_batched_vjp(backend, make, note):
  for wrong in (True, False):
    cg.register_kernel(kf.OP, backend, make(wrong), name="k", unsupported_modes=_UNSUPPORTED)
    try:
      report = cg.cross_check(kf.OP, backends=[backend], impls=["k"], **_FAST)
    finally:
      cg.unregister_kernel(kf.OP, backend, "k")
    failing = [r for r in report.rows if not r.ok]
    checked = {r.mode for r in report.rows if r.check == "vjp"}
    assert "vmap" in checked and "batched_vjp" in checked
    if not wrong:
      assert report.ok, report.table(failures_only=True)
      continue
    assert {(r.mode, r.check) for r in failing} == {("batched_vjp", "vjp")} | (
        {("batched_vjp", "forward")} if backend == "jax" else set()), report.table()
    assert all(r.impl == "k" for r in failing)
    assert any(note in r.note for r in failing), [r.note for r in failing]


def test_unsupported_key_is_a_skipped_row():
  op = cg.OpDef(name="square_batched_vjp", forward=lambda xp, x: (xp.square(x), (x,)),
                backward=lambda xp, res, g: (2 * res[0] * g,),
                sample=lambda rng: (rng.standard_normal((3,)),),
                unsupported_modes={"jax:batched_vjp": "planted reason"})
  report = cg.cross_check([op], backends=["jax"], modes=["vmap", "batched_vjp"], **_FAST)
  (row,) = [r for r in report.rows if r.mode == "batched_vjp"]
  assert row.check == "skipped" and row.note == "unsupported by the op: planted reason"
