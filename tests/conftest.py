"""Shared fixtures: run an op's forward and VJP through a backend's public API."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
import pytest  # pylint: disable=g-import-not-at-top,wrong-import-position

import crossgrad as cg  # pylint: disable=g-import-not-at-top,wrong-import-position


def _to_numpy(out):
  return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else np.asarray(out)


def _tensorflow_vjp(op, inputs, g, **params):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  fn = cg.tensorflow.get(op, **params)
  args = [tf.constant(x) for x in inputs]
  with tf.GradientTape() as tape:
    for x in args:
      tape.watch(x)
    out = fn(*args)
  grads = tape.gradient(out, args, output_gradients=g)
  return (_to_numpy(out),
          tuple(None if gr is None else gr.numpy() for gr in grads))


def _jax_vjp(op, inputs, g, **params):
  import jax  # pylint: disable=g-import-not-at-top
  with jax.enable_x64(any(np.asarray(x).dtype == np.float64 for x in inputs)):
    fn = cg.jax.get(op, **params)
    diff = [i for i, x in enumerate(inputs) if np.issubdtype(np.asarray(x).dtype, np.floating)]

    def f(*d):
      args = list(inputs)
      for i, x in zip(diff, d):
        args[i] = x
      return fn(*args)

    out, vjp_fn = jax.vjp(f, *[inputs[i] for i in diff])
    if isinstance(out, tuple):  # JAX wants float0 zeros for integer outputs.
      g = tuple(np.zeros(o.shape, jax.dtypes.float0) if gi is None else gi
                for o, gi in zip(out, g))
    cts = vjp_fn(g)
    full = [None] * len(inputs)
    for i, ct in zip(diff, cts):
      full[i] = np.asarray(ct)
    return _to_numpy(out), tuple(full)


def _numpy_vjp(op, inputs, g, **params):
  out, vjp_fn = cg.numpy.vjp(op, *inputs, **params)
  return _to_numpy(out), vjp_fn(g)


VJP = {"numpy": _numpy_vjp, "tensorflow": _tensorflow_vjp, "jax": _jax_vjp}


@pytest.fixture(params=sorted(VJP))
def backend_vjp(request):
  """``vjp(op, inputs, g, **params) -> (output, input cotangents)`` through a public API."""
  return VJP[request.param]
