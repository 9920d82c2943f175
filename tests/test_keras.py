"""`crossgrad.keras` and `crossgrad.layers`: in this process (Keras' TensorFlow backend) the
Keras plumbing (configs, loading, cloning, errors); under every backend (tests/keras_worker.py:
here for TensorFlow, one subprocess for each other backend) values and gradients against
the NumPy reference."""

import os

import keras
import numpy as np
import pytest

import crossgrad as cg
from crossgrad import layers
import keras_backends

X = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


def _model():
  inputs = keras.Input((3,))
  quantized = cg.keras.OpLayer("ste_quantize", scale=0.5, name="quantize")(inputs)
  h = layers.PositiveDense(2, name="positive")(quantized)
  return keras.Model(inputs, cg.keras.get("leaky_relu", alpha=0.1)(h))


def test_every_backend_runs_the_ops_backward_and_samples_the_same_masks(tmp_path):
  masks = {}
  for backend in keras_backends.BACKENDS:
    path = str(tmp_path / f"{backend}.npz")
    if backend == keras.backend.backend():  # This process's backend: no subprocess.
      import keras_worker  # pylint: disable=g-import-not-at-top
      keras_worker.check_all(path)
    else:
      out = keras_backends.run(backend, [os.path.join(os.path.dirname(__file__),
                                                      "keras_worker.py"), path])
      assert out.strip().endswith(f"ok {backend}")
    masks[backend] = np.load(path)
  for backend, got in masks.items():  # Threefry words (seed, step) in three frameworks.
    for step in ("step0", "step1"):
      np.testing.assert_array_equal(got[step], masks["jax"][step], err_msg=backend)
  assert not np.array_equal(masks["jax"]["step0"], masks["jax"]["step1"])


def test_model_saves_loads_and_clones_with_the_same_predictions(tmp_path):
  model = _model()
  want = model.predict(X, verbose=0)
  kernel, bias = (w.numpy() for w in model.get_layer("positive").weights)
  h = (np.round(X / 0.5) * 0.5) @ np.maximum(kernel, 0).T + bias
  np.testing.assert_allclose(want, np.where(h > 0, h, 0.1 * h), rtol=1e-6)
  path = str(tmp_path / "m.keras")
  model.save(path)
  clone = keras.models.clone_model(model)
  clone.set_weights(model.get_weights())
  for other in (keras.models.load_model(path), clone):
    np.testing.assert_array_equal(other.predict(X, verbose=0), want)
  config = model.get_layer("quantize").get_config()
  assert (config["op"], config["scale"]) == ("ste_quantize", 0.5)


def test_layers_round_trip_their_configs():
  for layer in (layers.PositiveDense(3, use_bias=False), layers.CenterLoss(4, weight=0.5),
                layers.BernoulliAttentionMask(seed=2, sample_at_inference=True),
                layers.SubmanifoldConv2D(4, 3, activation="relu"),
                layers.SparseConv2D(3, 2, strides=2, capacity=9),
                cg.keras.OpLayer("ste_quantize", scale=0.5, bits=4)):
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is type(layer) and restored.get_config() == layer.get_config()


def test_a_missing_op_at_load_is_a_crossgrad_error_naming_it(tmp_path):
  op = cg.register(cg.OpDef("tmp_keras_square", lambda xp, x: (x * x, (x,)),
                            lambda xp, res, g: (2 * res[0] * g,)))
  try:
    inputs = keras.Input((3,))
    path = str(tmp_path / "m.keras")
    keras.Model(inputs, cg.keras.OpLayer(op.name)(inputs)).save(path)
  finally:
    cg.unregister(op.name)
  with pytest.raises(cg.CrossgradError, match="unknown op") as info:
    keras.models.load_model(path)
  assert info.value.op == "tmp_keras_square" and "Import the module" in info.value.hint


def test_symbolic_shapes_with_unknown_batch_and_bad_parameters():
  out = cg.keras.get("center_loss")(keras.KerasTensor((None, 2)),
                                    keras.KerasTensor((None,), "int32"),
                                    keras.KerasTensor((4, 2)))
  assert tuple(out.shape) == () and out.dtype == "float32"
  with pytest.raises(cg.CrossgradError, match="unknown static parameter"):
    cg.keras.OpLayer("ste_quantize", scael=0.5)


def test_check_rows_through_keras_pass_and_catch_a_backward_wrong_under_keras_only():
  from crossgrad.checker import engine, keras_rows  # pylint: disable=g-import-not-at-top
  planted = os.path.join(os.path.dirname(__file__), "testdata", "keras_planted_op.py")
  keras_rows.register([planted])
  try:
    from crossgrad.checker import selection  # pylint: disable=g-import-not-at-top
    selection.load_module(planted)
    report = engine.cross_check(["positive_matmul", "keras_planted_square"],
                                backends=["keras"], modes=["jax"], dtypes=["float32"],
                                special=False)
  finally:
    cg.unregister("keras_planted_square")
    from crossgrad.backends.common import base  # pylint: disable=g-import-not-at-top
    base.unregister("keras")
  keras_rows_of = lambda op: [r for r in report.rows if r.backend == "keras" and r.op == op]
  assert keras_rows_of("positive_matmul") and all(r.ok for r in keras_rows_of("positive_matmul"))
  assert any(not r.ok for r in keras_rows_of("keras_planted_square"))
  assert all(r.ok for r in report.rows if r.backend == "numpy")
