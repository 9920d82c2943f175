"""The legacy TF1 programs the TF1 tests port: loading them from testdata/, and their output
and gradients in a tf.compat.v1 graph (the oracle a port must match)."""

import importlib.util
import pathlib
import sys

import tensorflow as tf

TESTDATA = pathlib.Path(__file__).parent / "testdata"


def load(name):
  """testdata/<name>.py, once per process (some register gradients under fixed names)."""
  key = f"crossgrad_fixture_{name}"
  if key not in sys.modules:
    spec = importlib.util.spec_from_file_location(key, TESTDATA / f"{name}.py")
    sys.modules[key] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules[key])
  return sys.modules[key]


def graph_vjp(build, inputs, cotangent):
  """``build``'s output and tf.gradients for ``cotangent`` in a tf.compat.v1 graph; None for
  an input tf.gradients gives no gradient."""
  graph = tf.Graph()
  with graph.as_default():
    xs = [tf.compat.v1.placeholder(x.dtype, x.shape) for x in inputs]
    y = build(*xs)
    grads = tf.gradients(y, xs, grad_ys=tf.constant(cotangent))
    with tf.compat.v1.Session(graph=graph) as session:
      out, fetched = session.run((y, [g for g in grads if g is not None]),
                                 dict(zip(xs, inputs)))
  fetched = iter(fetched)
  return out, [None if g is None else next(fetched) for g in grads]
