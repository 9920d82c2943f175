"""An op written from the standard's array object (docs/array-api.md) cross-checks in every
backend and every mode: x.size, x.__array_namespace__(), x.to_device, xp.zeros(...,
device=x.device), .T and .mT, real x complex operators and integer-array indexing."""

import numpy as np

import crossgrad as cg


def _complex_dtype(xp, x):
  return xp.complex64 if x.dtype == xp.float32 else xp.complex128


def _forward(xp, x, rows):
  ns = x.__array_namespace__()  # A namespace of the standard for x (the body's xp or its own).
  here = x.to_device(x.device)
  phase = ns.exp(xp.zeros(x.shape, dtype=_complex_dtype(xp, x), device=x.device) + 0.5j)
  rotated = xp.real((here * phase) * xp.conj(phase))  # Real x complex operators: x again.
  # Integer-array indexing: of the int32 operand by int8 indices, then of a differentiable one.
  picked = rotated[rows[xp.asarray([0, 1], dtype=xp.int8, device=x.device)]]
  return xp.sum(picked.mT.T * 2.0, axis=-1) / x.size, (x, rows)


def _backward(xp, residuals, g):
  x, rows = residuals
  hit = rows[:, None] == xp.arange(x.shape[0], device=x.device)  # int32 against int64.
  spread = xp.ones((1, x.shape[1]), dtype=g.dtype, device=g.device)
  return (xp.astype(hit, g.dtype).mT @ (g[:, None] * spread)) * (2.0 / x.size), None


def _op(name, backward=_backward):
  return cg.OpDef(name, _forward, backward, nondiff=("rows",),
                  sample=lambda rng: (rng.standard_normal((3, 4)), np.array([2, 0], np.int32)))


def test_an_op_using_the_array_object_passes_in_every_backend_and_mode():
  report = cg.cross_check([_op("body_array_object")],
                          backends=["numpy", "jax", "tensorflow", "torch"], dtypes=["float64"],
                          special=False)
  assert report.ok, report
  rows = report.rows
  for backend, modes in (("jax", {"eager", "jit", "vmap", "scan", "checkpoint"}),
                         ("tensorflow", {"eager", "graph", "jit", "vectorized_map"}),
                         ("torch", {"eager", "compile", "vmap"})):
    ran = {r.mode for r in rows if r.backend == backend and r.check == "vjp"}
    assert modes <= ran, (backend, ran)


def test_a_wrong_gradient_written_so_is_caught():
  def halved(xp, residuals, g):
    grad, none = _backward(xp, residuals, g)
    return grad / 2.0, none

  report = cg.cross_check([_op("body_array_object_halved", halved)], backends=["numpy"],
                          dtypes=["float64"], special=False)
  assert not report.ok
