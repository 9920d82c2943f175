"""The standard's array object inside JAX op bodies (backends/jax/array_object.py): device and
to_device on tracers under jit, vmap, scan and checkpoint, JAX's arrays at the op boundary,
and the same jaxpr as with plain tracers."""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.jax import array_object as jax_array_object
from crossgrad.registry.ops import BUILTIN

_ = cg.jax.xp  # Loading the backend hands the array object its xp.
xp = jax_array_object.body_namespace()
DEVICES = []  # What each traced body read as x.device.


def _forward(xp_, x):
  DEVICES.append(x.device)
  zeros = xp_.zeros(x.shape, dtype=x.dtype, device=x.device)
  return zeros + x.to_device(x.device) * 3.0, ()


def _backward(xp_, residuals, g):
  del residuals
  return (xp_.ones(g.shape, dtype=g.dtype, device=g.device) * g * 3.0,)


TRANSFORMS = {
    "eager": lambda f: f,
    "jit": jax.jit,
    "vmap": jax.vmap,
    "scan": lambda f: lambda x: jax.lax.scan(lambda c, row: (c, f(row)), 0.0, x)[1],
    "checkpoint": jax.checkpoint,
}


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_device_and_to_device_on_tracers(transform):
  """A body's x.device is the array's device where its values are known (an op's first
  eager call runs unjitted) and None where traced (the computation's device); creating or
  moving there works either way."""
  op = cg.jax.get(cg.OpDef(f"jax_array_triple_{transform}", _forward, _backward))
  transformed = TRANSFORMS[transform](op)
  fn = lambda x: jnp.sum(transformed(x) ** 2)
  x = jnp.arange(6.0).reshape(2, 3)
  DEVICES.clear()
  value, grad = jax.value_and_grad(fn)(x)
  np.testing.assert_allclose(value, 9.0 * np.sum(np.arange(6.0) ** 2))
  np.testing.assert_allclose(grad, 18.0 * np.arange(6.0).reshape(2, 3))
  assert DEVICES and set(DEVICES) <= {None, x.device}
  assert transform == "eager" or None in DEVICES
  assert isinstance(grad, jax.Array)


def test_concrete_arrays_report_their_device():
  device = jax.devices("cpu")[0]
  x = jax_array_object.Array(jax.device_put(jnp.arange(3.0), device))
  assert x.device == device and x.to_device(device).device == device
  assert x.to_device(None) is x
  assert x.__array_namespace__() is xp and type(xp.zeros(2, device=x.device)) is type(x)


def test_operators_and_attributes_are_the_standard_s():
  x = jax_array_object.Array(jnp.array([[-7.0, 7.0], [0.0, 2.0]]))
  np.testing.assert_array_equal(np.asarray(x // 2.0), [[-4.0, 3.0], [0.0, 1.0]])
  np.testing.assert_array_equal(np.asarray(x % -3.0), [[-1.0, -2.0], [-0.0, -1.0]])
  np.testing.assert_array_equal(np.asarray(-x[:, ::-1]), [[-7.0, 7.0], [-2.0, -0.0]])
  assert (x.size, x.ndim, x.shape, x.mT.shape) == (4, 2, (2, 2), (2, 2))
  z = x * (1 + 1j)
  assert z.dtype == jnp.complex64 or z.dtype == jnp.complex128
  np.testing.assert_array_equal(np.asarray(x[jax_array_object.Array(jnp.array([1, 0],
                                                                         jnp.int8))]),
                                [[0.0, 2.0], [-7.0, 7.0]])
  with pytest.raises(TypeError, match="unsupported operand type"):
    _ = x / None


CASES = [(op, op.resolve_params(op.param_sets[0])) for op in BUILTIN]
IDS = [op.name for op in BUILTIN]


@pytest.mark.parametrize("op, params", CASES, ids=IDS)
def test_built_in_ops_trace_to_the_same_jaxpr(op, params):
  """The op's forward and backward bodies, traced with and without the array object."""
  inputs = [jnp.asarray(x) for x in op.sample(np.random.default_rng(0))]
  core = cg.jax.get(op, **params).core

  def body(*args):
    result = core.forward(args)
    cotangent = tuple(jnp.ones_like(o) if jnp.issubdtype(o.dtype, jnp.inexact) else None
                      for o in result.outs)
    grads = core.backward(result.residuals, cotangent, result.specs,
                          lambda i: jnp.zeros_like(result.outs[i]))
    return result.outs, grads

  jaxprs = []
  for wrapped in (True, False):
    with contextlib.nullcontext() if wrapped else jax_array_object.native_arrays():
      jaxprs.append(str(jax.make_jaxpr(body)(*inputs)))
  assert jaxprs[0] == jaxprs[1]
