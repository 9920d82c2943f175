"""Ops written only with the Array API standard cross-check green in every backend, unedited.

The two worked examples of docs/array-api.md (``xp.linalg``, sorting) plus ops using
``argmax``, ``take_along_axis``, ``var``, ``log1p`` and trigonometric and hyperbolic
functions: each backward is derived by hand, so the finite-difference rows check it, and
every backend's rows compare with the NumPy reference.
"""

import pathlib
import re

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.registry import namespace

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "array-api.md"


def _doc_ops():
  """The OpDefs the docs page defines, from its python blocks (imports, then definitions)."""
  scope = {}
  python = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.S | re.M)
  for body in [python[0]] + [b for b in python if "= cg.OpDef(" in b]:
    exec(body, scope)  # pylint: disable=exec-used
  return scope["LOGABSDET"], scope["SPARSEMAX"]


def _max_forward(xp, x):
  index = xp.argmax(x, axis=-1, keepdims=True)
  return xp.squeeze(xp.take_along_axis(x, index, axis=-1), axis=-1), (x, index)


def _max_backward(xp, residuals, g):
  x, index = residuals
  hit = xp.arange(x.shape[-1], dtype=index.dtype) == index
  return (xp.where(hit, xp.expand_dims(g, axis=-1), xp.zeros_like(x)),)


def _layer_norm_forward(xp, x):
  mean = xp.mean(x, axis=-1, keepdims=True)
  inv_std = 1.0 / xp.sqrt(xp.var(x, axis=-1, keepdims=True) + 1e-3)
  y = (x - mean) * inv_std
  return y, (y, inv_std)


def _layer_norm_backward(xp, residuals, g):
  y, inv_std = residuals
  mean_g = xp.mean(g, axis=-1, keepdims=True)
  return (inv_std * (g - mean_g - y * xp.mean(g * y, axis=-1, keepdims=True)),)


def _smooth_forward(xp, x):
  y = (xp.sin(x) * xp.cosh(x) + xp.tanh(x) * xp.cos(x) + xp.log1p(x * x) + xp.atan(x)
       + xp.asinh(x))
  return y, (x,)


def _smooth_backward(xp, residuals, g):
  (x,) = residuals
  t = xp.tanh(x)
  dy = (xp.cos(x) * xp.cosh(x) + xp.sin(x) * xp.sinh(x) + (1.0 - t * t) * xp.cos(x)
        - t * xp.sin(x) + (2.0 * x + 1.0) / (1.0 + x * x) + 1.0 / xp.sqrt(1.0 + x * x))
  return (g * dy,)


def _cross_entropy_forward(xp, logits, labels):
  shifted = logits - xp.max(logits, axis=-1, keepdims=True)
  log_z = xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
  picked = xp.take_along_axis(shifted, xp.expand_dims(labels, axis=-1), axis=-1)
  return xp.squeeze(log_z - picked, axis=-1), (xp.exp(shifted - log_z), labels)


def _cross_entropy_backward(xp, residuals, g):
  probs, labels = residuals
  hit = xp.arange(probs.shape[-1], dtype=labels.dtype) == xp.expand_dims(labels, axis=-1)
  return xp.expand_dims(g, axis=-1) * (probs - xp.astype(hit, probs.dtype)), None


OWN_OPS = (
    cg.OpDef("std_max", _max_forward, _max_backward,
             sample=lambda rng: (rng.standard_normal((4, 5)),),
             doc="max over the last axis by argmax and take_along_axis"),
    cg.OpDef("std_layer_norm", _layer_norm_forward, _layer_norm_backward,
             sample=lambda rng: (rng.standard_normal((3, 6)),),
             doc="(x - mean) / sqrt(var + 1e-3) over the last axis"),
    cg.OpDef("std_smooth", _smooth_forward, _smooth_backward,
             sample=lambda rng: (rng.uniform(-1.5, 1.5, (3, 4)),),
             doc="sin cosh + tanh cos + log1p(x^2) + atan + asinh"),
    cg.OpDef("std_cross_entropy", _cross_entropy_forward, _cross_entropy_backward,
             sample=lambda rng: (rng.standard_normal((5, 4)),
                                 rng.integers(0, 4, 5).astype(np.int32)),
             nondiff=("labels",), doc="softmax cross-entropy with integer labels"),
)


@pytest.fixture(name="ops", scope="module")
def _registered_ops():
  ops = [cg.register(op) for op in (*_doc_ops(), *OWN_OPS)]
  yield ops
  for op in ops:
    cg.unregister(op.name)


def _missing(xp):
  return xp.missing + (() if "linalg" in xp.missing else xp.linalg.missing)


def test_the_ops_use_the_functions_they_are_written_to_exercise():
  source = pathlib.Path(__file__).read_text() + DOC.read_text()
  for name in ("xp.linalg.slogdet", "xp.linalg.inv", "xp.sort", "xp.cumulative_sum",
               "xp.take_along_axis", "xp.argmax", "xp.var", "xp.log1p", "xp.sin", "xp.cosh"):
    assert name + "(" in source, name


def test_the_ops_use_no_extension():
  source = pathlib.Path(__file__).read_text() + DOC.read_text()
  body = source[source.index("def _max_forward"):source.index("OWN_OPS = (")]
  assert not any(f"xp.{name}(" in body for name in namespace.EXTENSIONS)


def test_reference_values(ops):
  by_name = {op.name: op for op in ops}
  x = np.array([[0.5, -2.0, 3.0, 1.0]])
  np.testing.assert_allclose(cg.numpy.get(by_name["std_max"])(x), [3.0])
  _, vjp_fn = cg.numpy.vjp(by_name["std_max"], x)
  np.testing.assert_allclose(vjp_fn(np.array([2.0]))[0], [[0.0, 0.0, 2.0, 0.0]])
  loss = cg.numpy.get(by_name["std_cross_entropy"])(x, np.array([2], np.int32))
  np.testing.assert_allclose(loss, [np.log(np.exp(x).sum()) - 3.0])


@pytest.mark.parametrize("backend", ["jax", "tensorflow"])
def test_standard_only_ops_cross_check_green(ops, backend):
  missing = _missing(getattr(cg, backend).xp)
  if missing:
    pytest.skip(f"the {backend} namespace does not implement the whole standard yet "
                f"({len(missing)} names missing, e.g. {', '.join(missing[:5])})")
  report = cg.cross_check(ops, backends=[backend])
  assert report.ok, report
  assert {r.backend for r in report.rows} == {"numpy", backend}


def _temperature_softmax(flip_in=None):
  """softmax(x / t) with a learnable 0-d temperature t: dt = -sum(dz * z) / t, whose terms
  cancel (dz sums to zero along each row). ``flip_in``: a backend whose dt has the wrong
  sign (a planted bug)."""
  def forward(xp, x, t):
    z = x / t
    e = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
    y = e / xp.sum(e, axis=-1, keepdims=True)
    return y, (y, z, t)

  def backward(xp, residuals, g):
    y, z, t = residuals
    dz = y * (g - xp.sum(g * y, axis=-1, keepdims=True))
    dt = -xp.sum(dz * z) / t
    return dz / t, -dt if xp.backend == flip_in else dt

  def sample(rng):  # Rows nearly constant: dt is about 1e-3 of its terms, whatever g is.
    return (rng.integers(1, 4, (3, 1)) + 1e-3 * rng.standard_normal((3, 4)),
            np.asarray(0.7))

  return cg.OpDef(f"std_temperature_softmax_{flip_in}", forward, backward, sample=sample)


@pytest.mark.parametrize("flip_in", [None, "torch"])
def test_a_cancelling_scalar_gradient_stays_green_in_float32(flip_in):
  """float32 gives dt to about 1e-7 of its terms, 1e-4 of itself (NumPy's reference too),
  so each backend's dt failed the strict comparison: a false alarm on a correct op. The VJP
  is compared as one vector; a dt of the wrong sign still fails."""
  report = cg.cross_check([_temperature_softmax(flip_in)], dtypes=["float32"],
                          backends=["tensorflow", "jax", "torch"], modes=["eager"])
  vjp = [r for r in report.rows if r.check == "vjp"]
  assert {r.backend for r in vjp} == {"tensorflow", "jax", "torch"}
  if flip_in is None:
    assert report.ok, report.table(failures_only=True)
    assert any(r.note.startswith("relative to the largest element") for r in vjp), report
    # A jax2tf round trip's cotangents against TF's eager ones: the same comparison.
    trip = cg.cross_check([_temperature_softmax()], dtypes=["float32"],
                          backends=["tensorflow"], modes=["jax2tf"])
    assert trip.ok and any(r.check == "round_trip" for r in trip.rows), trip.table()
  else:
    assert {r.backend for r in report.failures} == {"torch"}, report.table()
