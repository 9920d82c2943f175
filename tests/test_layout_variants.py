"""``layout`` variant rows: torch gets the sample as non-contiguous views with the same
values (as `h.chunk(2, -1)` hands a SwiGLU its halves); a kernel that reads its inputs'
storage flat is wrong there and right on contiguous inputs, the emitted op and a kernel
that reshapes are green."""

import numpy as np
import pytest
import torch

import crossgrad as cg
from crossgrad.backends.common import base

LAYOUT = "strided inputs and cotangents (non-contiguous views)"


def _swiglu(xp, a, b):
  s = 1 / (1 + xp.exp(-a))
  return a * s * b, (a, b, s)


def _swiglu_backward(xp, r, g):
  a, b, s = r
  return (xp.unbroadcast(g * b * s * (1 + a * (1 - s)), a),
          xp.unbroadcast(g * a * s, b))


OP = cg.OpDef("t_layout_swiglu", _swiglu, _swiglu_backward,
              sample=lambda rng: (rng.standard_normal((4, 6)), rng.standard_normal((4, 6))))


def _storage_flat(a, b):
  """Reads each input's storage as if it were contiguous: its gaps, where it is a view."""
  a, b = torch.broadcast_tensors(a, b)
  fa, fb = (t.as_strided((t.numel(),), (1,)) for t in (a, b))
  return (torch.nn.functional.silu(fa) * fb).view(a.shape)


def _reshaped(a, b):
  a, b = (t.contiguous() for t in torch.broadcast_tensors(a, b))
  return (torch.nn.functional.silu(a.reshape(-1)) * b.reshape(-1)).view(a.shape)


@pytest.fixture(params=[("storage_flat", _storage_flat), ("reshaped", _reshaped)],
                ids=lambda p: p[0])
def kernel(request):
  name, fn = request.param
  cg.register_kernel(OP, "torch", fn, name=name)
  yield name
  cg.unregister_kernel(OP, "torch", name)


def _layout_rows(report, impl):
  return [r for r in report.rows if r.variant == LAYOUT and r.impl == impl]


def test_strided_views_hold_the_same_values():
  torch_backend = base.load("torch")
  x = np.arange(12.0).reshape(3, 4)
  contiguous = torch_backend.evaluate(OP, {}, [x, x], [np.ones((3, 4))])
  strided = torch_backend.evaluate(OP, {}, [x, x], [np.ones((3, 4))], layout="strided")
  for want, got in zip([*contiguous[0], *contiguous[1]], [*strided[0], *strided[1]]):
    np.testing.assert_array_equal(got, want)
  with pytest.raises(cg.CrossgradError, match="layout"):
    torch_backend.evaluate(OP, {}, [x, x], [np.ones((3, 4))], layout="transposed")


def test_a_kernel_reading_storage_flat_fails_only_on_the_views(kernel):
  report = cg.cross_check([OP], backends=["torch"], dtypes=["float64"])
  rows = _layout_rows(report, kernel)
  assert {r.mode for r in rows} == {"eager", "compile"}
  if kernel == "reshaped":
    assert report.ok, report.table()
    return
  assert rows and not any(r.ok for r in rows)
  assert all("nan vs reference" in r.note for r in rows)  # The gaps it read.
  sample_rows = [r for r in report.rows if r.impl == kernel and not r.variant]
  assert sample_rows and all(r.ok for r in sample_rows)  # Green on contiguous inputs.
  assert all(r.ok for r in _layout_rows(report, "emitted"))
