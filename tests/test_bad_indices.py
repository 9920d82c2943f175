"""Crossgrad's bad-index rule (``xp.take``) holds on every backend, mode and device, and
the framework differences it papers over (the README's table) are as documented.

The rule: an index outside ``[0, n)``, negative ones included, reads zero. Expected
values come from plain Python loops over the rule, never from a framework.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import crossgrad as cg

X = np.arange(15, dtype=np.float32).reshape(5, 3) + 1.0
# The first and last indices are where a backend may park bad indices (TF clamps them):
# their non-finite values must not leak.
X[0] = X[-1] = [np.nan, np.inf, -np.inf]
EMPTY_ROWS, EMPTY_COLUMNS = np.zeros((0, 3), np.float32), np.zeros((2, 0), np.float32)
CASES = (  # (x, indices, axis); on an empty axis no index is in range.
    (X, np.array([[-6, -1, 0], [2, 4, 5], [7, 100, 3]], np.int32), 0),
    (X, np.array([-1, 0, 2, 3], np.int64), 1),
    (X, np.array([2, -4, 9], np.int32), -1),
    (EMPTY_ROWS, np.array([0, -1, 2], np.int32), 0),
    (EMPTY_COLUMNS, np.array([[0], [1]], np.int64), 1),
)


def rule(x, indices, axis):
  """x's slices along ``axis`` at ``indices``; zeros for an index outside [0, n)."""
  axis %= x.ndim
  rows = np.moveaxis(x, axis, 0)
  slices = [rows[i] if 0 <= i < rows.shape[0] else np.zeros(rows.shape[1:], x.dtype)
            for i in indices.reshape(-1)]
  out = np.stack(slices).reshape(indices.shape + rows.shape[1:])
  k = indices.ndim  # The index dimensions go where the axis was.
  return np.moveaxis(out, list(range(k)), list(range(axis, axis + k)))


def _tensorflow(device, mode):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  fn = lambda x, i, axis: cg.tensorflow.xp.take(x, i, axis=axis)
  if mode != "eager":
    fn = tf.function(fn, jit_compile=(mode == "jit"), autograph=False)
  with tf.device("/device:" + device.upper()):
    return [fn(tf.constant(x), tf.constant(i), axis).numpy() for x, i, axis in CASES]


def _jax(device, mode):
  import jax  # pylint: disable=g-import-not-at-top
  fn = lambda x, i, axis: cg.jax.xp.take(x, i, axis=axis)
  if mode == "jit":
    fn = jax.jit(fn, static_argnums=2)
  target = cg.jax.find_device(device)
  return [np.asarray(fn(jax.device_put(x, target), jax.device_put(i, target), axis))
          for x, i, axis in CASES]


def _torch(device, mode):
  import torch  # pylint: disable=g-import-not-at-top
  def every_case(*arrays):
    return [cg.torch.xp.take(x, i, axis=axis)
            for x, i, (_, _, axis) in zip(arrays[::2], arrays[1::2], CASES)]
  if mode == "compile":
    every_case = torch.compile(every_case, fullgraph=True)
  target = cg.torch.find_device(device)
  outs = every_case(*(torch.as_tensor(a, device=target) for x, i, _ in CASES for a in (x, i)))
  return [o.cpu().numpy() for o in outs]


def take_everywhere(backends=("tensorflow", "jax", "torch")):
  """{backend/device/mode: results of every case} on every device each of ``backends``
  sees (and NumPy's)."""
  results = {"numpy/cpu:0/eager": [cg.numpy.xp.take(x, i, axis=a) for x, i, a in CASES]}
  runs = {"tensorflow": _tensorflow, "jax": _jax, "torch": _torch}
  for name in backends:
    run = runs[name]
    module = getattr(cg, name)
    for device in module.devices():
      for mode in module.MODES:
        results[f"{name}/{device}/{mode}"] = run(device, mode)
  return results


def _assert_rule(results):
  for where, outs in results.items():
    for (x, indices, axis), got in zip(CASES, outs):
      np.testing.assert_array_equal(got, rule(x, indices, axis), err_msg=where, strict=True)


def test_take_follows_the_rule_on_every_device_here():
  _assert_rule(take_everywhere())


def test_take_follows_the_rule_on_several_logical_devices():
  """TensorFlow's and JAX's CPU split in two (torch keeps its one CPU device: the test
  above)."""
  script = ("import json, sys; sys.path.insert(0, sys.argv[1])\n"
            "from crossgrad.backends.common import cpu_devices; cpu_devices.configure(2)\n"
            "import test_bad_indices as t\n"
            "print(json.dumps({k: [o.tolist() for o in v] for k, v in "
            "t.take_everywhere(('tensorflow', 'jax')).items()}))\n")
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  done = subprocess.run([sys.executable, "-c", script, str(pathlib.Path(__file__).parent)],
                        capture_output=True, text=True, env=env, timeout=300, check=True)
  results = json.loads(done.stdout.strip().splitlines()[-1])
  assert {k for k in results if k.endswith("/cpu:1/jit")} == {"tensorflow/cpu:1/jit",
                                                              "jax/cpu:1/jit"}
  _assert_rule({k: [np.array(o, np.float32) for o in v] for k, v in results.items()})


def _every_integer_index_dtype() -> list[tuple[np.ndarray, np.ndarray]]:
  """(x, indices) with indices of each integer dtype besides int32 and int64, each dtype's
  extremes included, and int16 indices into more rows than int16 holds."""
  cases = [(X, np.array([np.iinfo(d).min, 0, 4, 5, np.iinfo(d).max], d))
           for d in (np.int8, np.uint8, np.int16, np.uint16, np.uint32, np.uint64)]
  return cases + [(np.arange(40000, dtype=np.float32)[:, None],
                   np.array([-1, 0, 32767], np.int16))]


def test_tensorflow_take_takes_every_integer_index_dtype():
  """The standard's indices may have any integer dtype; TF's gather takes int16/32/64 only,
  and an index dtype may not hold the axis' size (int16 against 40000 rows)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cases = _every_integer_index_dtype()
  for mode in cg.tensorflow.MODES:
    fn = lambda x, i: cg.tensorflow.xp.take(x, i, axis=0)
    if mode != "eager":
      fn = tf.function(fn, jit_compile=(mode == "jit"), autograph=False)
    for x, indices in cases:
      np.testing.assert_array_equal(fn(tf.constant(x), tf.constant(indices)),
                                    rule(x, indices, 0), err_msg=f"{mode} {indices.dtype}")


def test_torch_take_takes_every_integer_index_dtype():
  """As TensorFlow's: torch's index_select takes int32/64 indices only, and its comparisons
  have no kernel for uint16, uint32 and uint64."""
  import torch  # pylint: disable=g-import-not-at-top
  cases = _every_integer_index_dtype()
  for x, indices in cases:
    got = cg.torch.xp.take(torch.as_tensor(x), torch.as_tensor(indices), axis=0)
    np.testing.assert_array_equal(got.numpy(), rule(x, indices, 0), err_msg=str(indices.dtype))


def test_out_of_range_indices_get_no_gradient():
  """Autodiff through xp.take: d sum(w * take(x, i)) / dx[j] = sum of w where i == j."""
  import jax  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = np.arange(5, dtype=np.float32)
  indices = np.array([-1, 0, 2, 2, 5, 9], np.int32)
  w = np.arange(1, 7, dtype=np.float32)
  expected = np.zeros(5, np.float32)
  for i, wi in zip(indices, w):
    if 0 <= i < 5:
      expected[i] += wi
  got_jax = jax.grad(lambda v: (w * cg.jax.xp.take(v, indices)).sum())(x)
  xt = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(xt)
    loss = tf.reduce_sum(w * cg.tensorflow.xp.take(xt, indices))
  got_tf = tf.convert_to_tensor(tape.gradient(loss, xt))
  import torch  # pylint: disable=g-import-not-at-top
  xt = torch.tensor(x, requires_grad=True)
  (torch.as_tensor(w) * cg.torch.xp.take(xt, torch.as_tensor(indices))).sum().backward()
  np.testing.assert_array_equal(got_jax, expected)
  np.testing.assert_array_equal(got_tf.numpy(), expected)
  np.testing.assert_array_equal(xt.grad.numpy(), expected)


# The framework behaviours the README's table reports (CPU), pinned so the table cannot rot.


def test_raw_gather_and_take_disagree_on_bad_indices():
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = np.arange(5, dtype=np.float32) + 1.0
  bad = np.array([-1, 5, 2], np.int32)
  with pytest.raises(IndexError):
    np.take(x, bad)
  with tf.device("/device:CPU:0"), pytest.raises(tf.errors.InvalidArgumentError):
    tf.gather(x, bad)
  xla = tf.function(lambda v, i: tf.gather(v, i), jit_compile=True)
  with tf.device("/device:CPU:0"):
    np.testing.assert_array_equal(xla(x, bad), [1.0, 5.0, 3.0])  # Clamped.
  np.testing.assert_array_equal(jnp.take(x, bad), [5.0, np.nan, 3.0])  # Wraps, NaN fill.
  np.testing.assert_array_equal(jnp.take(x, bad, mode="clip"), [1.0, 5.0, 3.0])
  np.testing.assert_array_equal(jnp.take(x, bad, mode="fill", fill_value=0), [5.0, 0, 3.0])
  np.testing.assert_array_equal(cg.numpy.xp.take(x, bad), [0.0, 0.0, 3.0])


def test_one_hot_already_follows_the_rule():
  import jax  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  labels = np.array([-1, 3, 1])
  expected = [[0, 0, 0], [0, 0, 0], [0, 1, 0]]
  np.testing.assert_array_equal(tf.one_hot(labels, 3), expected)
  np.testing.assert_array_equal(jax.nn.one_hot(labels, 3), expected)


def test_xla_max_skips_nan_but_xp_max_does_not():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = tf.constant([1.0, np.nan, 3.0])
  with tf.device("/device:CPU:0"):
    raw = tf.function(tf.reduce_max, jit_compile=True)(x)
    ours = tf.function(cg.tensorflow.xp.max, jit_compile=True)(x)
    ours_min = tf.function(cg.tensorflow.xp.min, jit_compile=True)(x)
  assert float(raw) == 3.0  # XLA on CPU: NaN dropped; eager and NumPy give NaN.
  assert np.isnan(float(tf.reduce_max(x))) and np.isnan(np.max([1.0, np.nan, 3.0]))
  assert np.isnan(float(ours)) and np.isnan(float(ours_min))
  np.testing.assert_array_equal(
      tf.function(lambda v: cg.tensorflow.xp.max(v, axis=1), jit_compile=True)(
          tf.constant([[1.0, 2.0], [np.nan, 0.0]])), [2.0, np.nan])


def test_integer_division_by_zero_differs():
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  a, b = np.array([7, -7, 0], np.int32), np.zeros(3, np.int32)
  with np.errstate(divide="ignore"):
    np.testing.assert_array_equal(a // b, [0, 0, 0])
  np.testing.assert_array_equal(jnp.asarray(a) // jnp.asarray(b), [-2, -2, -1])
  with tf.device("/device:CPU:0"):
    with pytest.raises(tf.errors.InvalidArgumentError):
      tf.constant(a) // tf.constant(b)
    xla = tf.function(lambda p, q: (p // q, p % q), jit_compile=True)(a, b)
  np.testing.assert_array_equal(xla[0], [-1, -2, -1])
  np.testing.assert_array_equal(xla[1], [7, -7, 0])


def test_float_to_int_cast_of_nan_and_overflow_differs():
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  y = np.array([np.nan, 1e10, -1e10], np.float32)
  low = np.iinfo(np.int32).min
  with np.errstate(invalid="ignore"):
    np.testing.assert_array_equal(y.astype(np.int32), [low, low, low])
  with tf.device("/device:CPU:0"):
    np.testing.assert_array_equal(tf.cast(y, tf.int32), [low, low, low])
    xla = tf.function(lambda v: tf.cast(v, tf.int32), jit_compile=True)(y)
  saturated = [0, np.iinfo(np.int32).max, low]
  np.testing.assert_array_equal(xla, saturated)
  np.testing.assert_array_equal(jnp.asarray(y).astype(jnp.int32), saturated)


def test_segment_sum_drops_ids_outside_the_segments_everywhere():
  """``xp.segment_sum``: a row whose id lies outside ``[0, num_segments)`` (negative or
  past the end) is dropped, in every backend and TensorFlow mode (TF drops negative ids
  and raises on CPU for the others, so crossgrad makes those negative)."""
  import jax  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  data = np.arange(12, dtype=np.float32).reshape(6, 2) + 1.0
  data[0] = [np.nan, np.inf]  # Dropped: must not reach any segment.
  ids = np.array([-1, 0, 3, 2, 7, 0], np.int32)
  expected = np.zeros((3, 2), np.float32)
  for row, i in zip(data, ids):
    if 0 <= i < 3:
      expected[i] += row
  segment_sum = lambda xp: lambda d, i: xp.segment_sum(d, i, 3)
  tf_fn = segment_sum(cg.tensorflow.xp)
  outs = {"numpy": segment_sum(cg.numpy.xp)(data, ids),
          "jax": segment_sum(cg.jax.xp)(data, ids),
          "jax jit": jax.jit(segment_sum(cg.jax.xp))(data, ids),
          "tensorflow eager": tf_fn(tf.constant(data), tf.constant(ids)),
          "torch": segment_sum(cg.torch.xp)(torch.as_tensor(data), torch.as_tensor(ids))}
  for mode, jit in (("tf.function", False), ("XLA", True)):
    outs[mode] = tf.function(tf_fn, jit_compile=jit)(tf.constant(data), tf.constant(ids))
  for where, out in outs.items():
    np.testing.assert_array_equal(np.asarray(out), expected, err_msg=where)
