"""sparse_cnn's two-layer example: a 4x4x2 sparse input through two sparse convolutions.

Builds its input (three active sites), runs two 2x2 sparse convolution layers
(2 -> 4 -> 8 channels) in TensorFlow and in JAX, prints the active sites of each layer
(3 -> 5 -> 4) and its six float64 gradient errors: the largest entry of
|J - J_fd| for TensorFlow's `GradientTape.jacobian` and JAX's `jax.jacrev`, with J_fd
from central differences of the NumPy layers (the seed reports 6e-14 .. 1e-11).

  python -m crossgrad.examples.sparse_two_layer [--short]
"""

from __future__ import annotations

from absl import flags
import numpy as np

import crossgrad as cg
from crossgrad.cli import usage

SEED_DENSE = np.array([
    [[1.7, 0.7], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
    [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
    [[0.0, 0.0], [0.0, 0.0], [7.9, 0.9], [4.8, 0.8]],
    [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]])
PAIRS = (("dM1/dM0", "M1", "M0"), ("dM1/dt0", "M1", "t0"), ("dM2/dM0", "M2", "M0"),
         ("dM2/dt0", "M2", "t0"), ("dt1/dt0", "t1", "t0"), ("dt2/dt0", "t2", "t0"))


def _weights(seed: int):
  rng = np.random.default_rng(seed)
  return rng.random((2, 2, 2, 4)), rng.random(4), rng.random((2, 2, 4, 8)), rng.random(8)


def layers(backend: str, x: cg.SparseData, weights) -> dict:
  """sparse_cnn's two layers in ``backend``: outputs keyed M1, t1, M2, t2 (and sites)."""
  conv = getattr(cg, backend).sparse_conv2d
  w1, b1, w2, b2 = weights
  y = conv(x, w1, b1, 2)
  z = conv(y, w2, b2, 2)
  return {"M1": y.M, "t1": y.ground_state, "M2": z.M, "t2": z.ground_state,
          "H1": y.H, "H2": z.H}


def _finite_differences(x: cg.SparseData, weights, step: float = 1e-3) -> dict:
  """Jacobians of the NumPy layers by central differences (the layers are affine)."""
  jacobians = {}
  for wrt in ("M0", "t0"):
    base = np.asarray(x.M if wrt == "M0" else x.ground_state)
    columns = {name: [] for name in ("M1", "t1", "M2", "t2")}
    for k in range(base.size):
      e = np.zeros(base.size)
      e[k] = step
      outs = []
      for sign in (1, -1):
        shifted = base + sign * e.reshape(base.shape)
        m, t = (shifted, x.ground_state) if wrt == "M0" else (x.M, shifted)
        outs.append(layers("numpy", cg.SparseData(x.H, m, x.dense_shape, t), weights))
      for name in columns:
        columns[name].append((np.ravel(outs[0][name]) - np.ravel(outs[1][name])) / (2 * step))
    for name, cols in columns.items():
      jacobians[(name, wrt)] = np.stack(cols, -1)
  return jacobians


def _tf_jacobians(x: cg.SparseData, weights) -> dict:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  m0, t0 = tf.constant(x.M), tf.constant(x.ground_state)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch([m0, t0])
    out = layers("tensorflow", cg.SparseData(tf.constant(x.H), m0, x.dense_shape, t0),
                 [tf.constant(w) for w in weights])
  zero = tf.UnconnectedGradients.ZERO  # t1 and t2 do not depend on M0.
  return {(name, wrt): tf.reshape(tape.jacobian(out[name], v, unconnected_gradients=zero,
                                                experimental_use_pfor=False),
                                  (-1, v.shape.num_elements())).numpy()
          for name in ("M1", "t1", "M2", "t2") for wrt, v in (("M0", m0), ("t0", t0))}


def _jax_jacobians(x: cg.SparseData, weights) -> dict:
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  with jax.enable_x64(True):
    def outputs(m0, t0):
      out = layers("jax", cg.SparseData(jnp.asarray(x.H), m0, x.dense_shape, t0),
                   [jnp.asarray(w) for w in weights])
      return {k: out[k] for k in ("M1", "t1", "M2", "t2")}
    jac = jax.jacrev(outputs, argnums=(0, 1))(jnp.asarray(x.M), jnp.asarray(x.ground_state))
    return {(name, wrt): np.asarray(jac[name][i]).reshape(np.size(jac[name][i]) // size, size)
            for name in ("M1", "t1", "M2", "t2")
            for i, (wrt, size) in enumerate((("M0", x.M.size), ("t0", x.ground_state.size)))}


def run(seed: int = 0) -> dict:
  """Prints the sites and the gradient errors; returns them."""
  x = cg.SparseData.from_dense(SEED_DENSE)
  weights = _weights(seed)
  out = layers("numpy", x, weights)
  print(f"active sites: input {x.n_valid}, layer 1 {len(out['H1'])}, layer 2 "
        f"{len(out['H2'])}")
  print("layer 1 sites:", np.asarray(out["H1"]).tolist())
  print("layer 2 sites:", np.asarray(out["H2"]).tolist())
  numeric = _finite_differences(x, weights)
  errors = {}
  for backend, jacobians in (("tensorflow", _tf_jacobians(x, weights)),
                             ("jax", _jax_jacobians(x, weights))):
    for label, out_name, wrt in PAIRS:
      errors[(backend, label)] = float(np.max(np.abs(
          jacobians[(out_name, wrt)] - numeric[(out_name, wrt)])))
  print(f"{'error':10}{'tensorflow':>14}{'jax':>14}")
  for label, _, _ in PAIRS:
    print(f"{label:10}{errors[('tensorflow', label)]:14.3e}{errors[('jax', label)]:14.3e}")
  return {"sites": (x.n_valid, len(out["H1"]), len(out["H2"])), "errors": errors}


def main(argv):
  del argv
  run(flags.FLAGS.seed)


if __name__ == "__main__":
  flags.DEFINE_bool("short", False, "Accepted for the test suite; the example is small already.")
  flags.DEFINE_integer("seed", 0, "Seed of the weights.")
  usage.run(main)
