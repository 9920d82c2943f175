"""OpDef(unsupported_modes=...): the cross-check reports those modes as skipped rows."""

import pytest

import crossgrad as cg


def _forward(xp, x):
  return xp.square(x), (x,)


def _backward(xp, residuals, g):
  del xp
  (x,) = residuals
  return (2 * x * g,)


def _op(**kwargs):
  return cg.OpDef(name="square_for_modes", forward=_forward, backward=_backward,
                  sample=lambda rng: (rng.standard_normal((3,)),), **kwargs)


def test_unsupported_mode_is_a_skipped_row_with_its_reason():
  report = cg.cross_check(
      [_op(unsupported_modes={"jax:jit": "planted reason", "jax:vmap": "no batching"})],
      backends=("jax",), dtypes=("float32",), modes=("eager", "jit", "vmap", "scan"))
  assert report.ok
  by_mode = {(r.mode, r.check): r for r in report.rows if r.backend == "jax"}
  assert set(by_mode) == {("eager", "forward"), ("eager", "vjp"), ("eager", "special"),
                          ("eager", "jvp"), ("eager", "second_order"), ("jit", "skipped"),
                          ("vmap", "skipped"), ("scan", "forward"), ("scan", "vjp"),
                          ("eager", "variant"),  # Not in jit, its first compiled mode.
                          ("eager", "custom_rule"), ("scan", "custom_rule")}
  assert by_mode[("jit", "skipped")].note == "unsupported by the op: planted reason"
  assert by_mode[("vmap", "skipped")].note == "unsupported by the op: no batching"


def test_bad_key_is_a_clear_error():
  with pytest.raises(cg.CrossgradError, match=r"square_for_modes.*unsupported_modes"):
    _op(unsupported_modes={"jit": "no backend named"})
