"""``unsupported``: a kernel lacking a rule for a row's transformation (a jax.custom_vjp
under forward mode, a torch.autograd.Function whose forward takes ctx under vmap) is
diagnosed from the framework's message with the fix, and declaring the mode as the message
says turns those rows into skipped ones."""

import jax
import jax.numpy as jnp
import pytest
import torch

import crossgrad as cg
from crossgrad.checker.diagnosis import causes
from crossgrad.registry import op_registry


@jax.custom_vjp
def _leaky_relu_vjp(x, alpha):
  return jnp.where(x > 0, x, alpha * x)


_leaky_relu_vjp.defvjp(lambda x, alpha: (_leaky_relu_vjp(x, alpha), (x, alpha)),
                       lambda r, g: (jnp.where(r[0] > 0, g, r[1] * g), None))


class _LeakyReluCtx(torch.autograd.Function):  # Old style: forward takes ctx.

  @staticmethod
  def forward(ctx, x, alpha):
    ctx.save_for_backward(x)
    ctx.alpha = alpha
    return torch.where(x > 0, x, alpha * x)

  @staticmethod
  def backward(ctx, g):
    (x,) = ctx.saved_tensors
    return torch.where(x > 0, g, ctx.alpha * g), None


KERNELS = {"jax": ("custom_vjp", lambda x, alpha: _leaky_relu_vjp(x, alpha)),
           "torch": ("ctx_function", lambda x, alpha: _LeakyReluCtx.apply(x, alpha))}


def _check(unsupported_modes=None):
  op = op_registry.get("leaky_relu")
  for backend, (name, fn) in KERNELS.items():
    cg.register_kernel(op, backend, fn, name=name,
                       unsupported_modes=(unsupported_modes or {}).get(backend))
  try:
    report = cg.cross_check([op], backends=list(KERNELS), dtypes=["float32"],
                            modes=["eager", "vmap"], special=False, variants="none")
  finally:
    for backend, (name, _) in KERNELS.items():
      cg.unregister_kernel(op, backend, name)
  return causes.diagnose(report, [op])


@pytest.fixture(scope="module")
def undeclared():
  return _check()


def test_only_the_kernels_missing_rules_fail(undeclared):
  assert {(r.backend, r.impl, r.check if r.backend == "jax" else r.mode)
          for r in undeclared.failures} == {
              ("jax", "custom_vjp", "jvp"), ("jax", "custom_vjp", "second_order"),
              ("torch", "ctx_function", "vmap")}


def test_each_is_unsupported_with_the_declaration_that_fixes_it(undeclared):
  for row in undeclared.failures:
    d = row.diagnosis
    assert d.kind == "unsupported", d
    key = str(row.check) if row.backend == "jax" else "vmap"
    assert d.values == {"mode": key, "impl": row.impl}
    assert (f"Declare it: cg.register_kernel(..., name={row.impl!r}, "
            f"unsupported_modes={{'{key}': 'why'}})") in d.message
  jax_row = next(r for r in undeclared.failures if r.backend == "jax")
  assert "a jax.custom_vjp has no forward-mode rule" in jax_row.diagnosis.message
  torch_row = next(r for r in undeclared.failures if r.backend == "torch")
  assert "setup_context" in torch_row.diagnosis.message


def test_declaring_as_the_message_says_skips_those_rows():
  report = _check({"jax": {"jvp": "custom_vjp", "second_order": "custom_vjp"},
                   "torch": {"vmap": "forward takes ctx"}})
  assert report.ok, report.table(rows=report.failures)
  skipped = {(r.backend, r.impl) for r in report.rows if r.check == "skipped"}
  assert {("jax", "custom_vjp"), ("torch", "ctx_function")} <= skipped
