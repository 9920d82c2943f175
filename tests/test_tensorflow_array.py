"""The standard's array object inside TensorFlow op bodies (backends/tensorflow/array_object.py):
its semantics against NumPy's, real tensors at the op boundary, and built-in ops' graphs and
optimised HLO unchanged by the wrapper."""

import collections
import contextlib
import inspect

import numpy as np
import pytest
import tensorflow as tf

import crossgrad as cg
from crossgrad.backends.tensorflow import array_object as tensorflow_array
from crossgrad.benchmarks import hlo
from crossgrad.registry.ops import BUILTIN

_ = cg.tensorflow  # Loading the backend hands the array object its xp.
xp = tensorflow_array.body_namespace()
nxp = cg.numpy.xp


def _array(x):
  return tensorflow_array.Array(tf.constant(x))


def test_operators_promote_as_the_standard():
  labels = np.array([0, 2, 1], np.int32)
  got = xp.expand_dims(_array(labels), axis=-1) == xp.arange(3)  # int32 against int64.
  np.testing.assert_array_equal(np.asarray(got), labels[:, None] == np.arange(3))
  x8, x64 = np.array([1, -2, 3], np.int8), np.array([4, 5, 6], np.int64)
  for op in ("__add__", "__sub__", "__mul__", "__floordiv__", "__mod__", "__and__",
             "__or__", "__xor__", "__lshift__", "__lt__", "__ne__"):
    got = getattr(_array(x8), op)(_array(np.abs(x64)))
    expected = getattr(x8, op)(np.abs(x64))
    assert got.dtype.name == expected.dtype.name, op
    np.testing.assert_array_equal(np.asarray(got), expected, err_msg=op)


def test_python_scalars_take_the_array_dtype():
  x = _array(np.array([1.0, 2.0], np.float32))
  for got in (x * 2.0, 2.0 * x, x + 1, 1 - x, x / 4, 2 ** x, x ** 2, -x, +x, abs(-x)):
    assert got.dtype == xp.float32
  i = _array(np.array([7, -7], np.int8))
  for got, expected in ((i // 2, [3, -4]), (i % 3, [1, 2]), (i << 1, [14, -14]), (~i, [-8, 6])):
    assert got.dtype == xp.int8
    np.testing.assert_array_equal(np.asarray(got), expected)



@pytest.mark.parametrize("other", [None, "2", [1.0, 2.0], object()])
def test_an_operand_that_is_no_array_or_scalar_is_pythons_type_error(other):
  """As NumPy says it (a data-dependent size is None in a graph: ``x / y.shape[0]``), not
  an error from inside the namespace."""
  x = _array(np.array([1.0, 2.0], np.float32))
  for apply in (lambda: x / other, lambda: other / x, lambda: x - other, lambda: x ** other):
    with pytest.raises(TypeError, match="unsupported operand type"):
      apply()

def test_attributes():
  x = _array(np.arange(24.0).reshape(2, 3, 4))
  assert x.shape == (2, 3, 4) and type(x.shape) is tuple
  assert (x.ndim, x.size, x.dtype) == (3, 24, xp.float64)
  assert x.mT.shape == (2, 4, 3) and x[0].T.shape == (4, 3)
  assert "CPU" in x.device and x.__array_namespace__() is xp
  assert x.to_device(x.device).shape == x.shape

  @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
  def unknown(t):
    a = tensorflow_array.Array(t)
    assert a.shape == (None, 3) and a.size is None and a.ndim == 2
    return t

  unknown.get_concrete_function()


def test_matmul_of_transposes_is_one_op_and_numpy_s_product():
  """A lazy matrix_transpose (.mT, 2-D .T, xp.matrix_transpose): matmul takes it as
  transpose_a/transpose_b; any other use reads the transpose itself."""
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
  c = rng.standard_normal((3, 4)).astype(np.complex128) * (1 + 2j)
  products = {"a @ b.mT": (lambda: _array(a) @ _array(b).mT, a @ np.swapaxes(b, -1, -2)),
              "b.mT.mT @ a.mT": (lambda: _array(b).mT.mT @ _array(a).mT,
                                 b @ np.swapaxes(a, -1, -2)),
              "xp.matmul(c.T, c)": (lambda: xp.matmul(xp.matrix_transpose(_array(c)), _array(c)),
                                    c.T @ c),
              "c.T @ c[:, 0]": (lambda: _array(c).T @ _array(c[:, 0]), c.T @ c[:, 0])}
  for name, (product, expected) in products.items():
    graph = tf.function(product).get_concrete_function().graph
    assert "Transpose" not in {node.type for node in graph.get_operations()}, name
    np.testing.assert_allclose(np.asarray(product()), expected, rtol=1e-12, err_msg=name)
  lazy = _array(b).mT
  assert (lazy.shape, lazy.ndim, lazy.dtype) == ((2, 4, 5), 3, xp.float64)
  np.testing.assert_array_equal(np.asarray(lazy + 1.0), np.swapaxes(b, -1, -2) + 1.0)
  np.testing.assert_array_equal(np.asarray(lazy[1, :, 0]), b[1, 0])
  with pytest.raises(ValueError, match=r"shapes \(2, 4, 3\) and \(2, 4, 5\) do not align"):
    _ = _array(a).mT @ _array(b).mT


def test_indexing():
  base = np.arange(24.0).reshape(4, 6)
  x = _array(base)
  rows = np.array([3, -1, 0], np.int8)
  cases = [(x[1], base[1]), (x[1:3, ::2], base[1:3, ::2]), (x[..., -1], base[..., -1]),
           (x[None, 2], base[None, 2]), (x[_array(np.int16(2))], base[2]),
           (x[_array(rows)], base[rows]), (x[_array(rows), :], base[rows, :]),
           (x[_array(rows), _array(np.array([0, 5, 1]))], base[rows, [0, 5, 1]]),
           (x[x > 10.0], base[base > 10.0]),
           (x[_array(rows), 4], base[rows, 4]), (x[-1, _array(rows[:2])], base[-1, rows[:2]]),
           (x[_array(np.array([[1], [2]])), -2], base[[[1], [2]], -2]),
           (x[_array(True)], base[None]), (x[_array(False)], base[None][:0])]
  for got, expected in cases:
    np.testing.assert_array_equal(np.asarray(got), expected)
  with pytest.raises(TypeError, match="immutable"):
    x[0] = 1.0


@pytest.mark.parametrize("kwargs", [{}, {"copy": True}, {"dl_device": (1, 0)},
                                    {"max_version": (1, 0)}])
def test_dlpack(kwargs):
  base = np.arange(6, dtype=np.int16).reshape(2, 3)
  x = _array(base)
  assert x.__dlpack_device__() == (1, 0)
  capsule = type("Exporter", (), {"__dlpack__": lambda self, **k: x.__dlpack__(**kwargs),
                                  "__dlpack_device__": lambda self: x.__dlpack_device__()})()
  np.testing.assert_array_equal(np.from_dlpack(capsule), base)
  np.testing.assert_array_equal(np.asarray(xp.from_dlpack(x)), base)


def _labelled_forward(xp_, logits, labels):
  n = logits.shape[-1]
  hit = xp_.expand_dims(labels, axis=-1) == xp_.arange(n)  # Needs the standard's promotion.
  return xp_.sum(xp_.where(hit, -logits, 0.0), axis=-1), (hit,)


def _labelled_backward(xp_, residuals, g):
  (hit,) = residuals
  assert type(hit.shape) is tuple  # The array object in the backward too.
  return -xp_.astype(hit, g.dtype) * g[:, None], None


LABELLED = cg.OpDef("labelled_pick", _labelled_forward, _labelled_backward,
                    nondiff=("labels",),
                    sample=lambda rng: (rng.standard_normal((3, 4)),
                                        np.array([0, 3, 1], np.int32)))


@pytest.mark.parametrize("jit", [False, True])
def test_an_op_written_for_the_array_object_runs_and_sees_real_tensors_outside(jit):
  op = cg.tensorflow.get(LABELLED)
  logits, labels = tf.constant(np.arange(12.0).reshape(3, 4)), tf.constant([0, 3, 1])
  labels = tf.cast(labels, tf.int32)

  def run(a, b):
    with tf.GradientTape() as tape:
      tape.watch(a)
      out = op(a, b)
    return out, tape.gradient(out, a)

  out, grad = (tf.function(run, jit_compile=True) if jit else run)(logits, labels)
  assert isinstance(out, tf.Tensor) and isinstance(grad, tf.Tensor)
  np.testing.assert_array_equal(out.numpy(), [-0.0, -7.0, -9.0])
  np.testing.assert_array_equal(grad.numpy(), -np.eye(4)[[0, 3, 1]])


CASES = [(op, op.resolve_params(p)) for op in BUILTIN for p in op.param_sets]
IDS = [f"{op.name}-{i}" for op in BUILTIN for i, _ in enumerate(op.param_sets)]


def _value_and_grad(op, params, inputs):
  fn = cg.tensorflow.get(op, **params)

  def run(*args):
    with tf.GradientTape() as tape:
      diff = [args[i] for i in op.diff_argnums]
      tape.watch(diff)
      outs = fn(*args)
    return outs, tape.gradient(outs, diff)

  return run


def _graph_ops(concrete):
  """Op types of a concrete function's graph and every function it calls."""
  graph = concrete.graph.as_graph_def()
  ops = collections.Counter(node.op for node in graph.node)
  for function in graph.library.function:
    ops.update(node.op for node in function.node_def)
  return ops


@pytest.mark.parametrize("op, params", CASES, ids=IDS)
def test_built_in_ops_compile_to_the_same_graph_and_hlo(op, params):
  inputs = [tf.constant(x) for x in op.sample(np.random.default_rng(0))]
  compiled = {}
  for wrapped in (True, False):
    with contextlib.nullcontext() if wrapped else tensorflow_array.native_arrays():
      graph = tf.function(_value_and_grad(op, params, inputs))
      xla = tf.function(_value_and_grad(op, params, inputs), jit_compile=True)
      compiled[wrapped] = (_graph_ops(graph.get_concrete_function(*inputs)),
                           hlo.summary(xla.experimental_get_compiler_ir(*inputs)(
                               stage="optimized_hlo"))["signature"])
  # The same graph, less the transposes (and their permutations) that the array object's
  # matmul takes as transpose_a/transpose_b (center_loss one, positive_matmul two).
  absorbed = compiled[False][0] - compiled[True][0]
  assert not compiled[True][0] - compiled[False][0]
  assert set(absorbed) <= {"Transpose", "Const"}
  assert absorbed["Const"] == absorbed["Transpose"] == {"center_loss": 1,
                                                        "positive_matmul": 2}.get(op.name, 0)
  # Under XLA: nothing more (positive_matmul's native transposes stay their own fusions).
  hlo_ops = {wrapped: sum((collections.Counter(dict(comp)) for comp in sig), collections.Counter())
             for wrapped, (_, sig) in compiled.items()}
  assert not hlo_ops[True] - hlo_ops[False]
  assert (hlo_ops[True] == hlo_ops[False]) == (op.name != "positive_matmul")


def test_body_namespace_keeps_signatures():
  """The standard's suite reads each function's signature (axis, keepdims, ...)."""
  for name in ("sum", "asarray", "concat", "matmul", "matrix_transpose"):
    assert inspect.signature(getattr(xp, name)) == inspect.signature(
        getattr(cg.tensorflow.xp, name)), name


def _pick_forward(xp_, x, rows):
  return x[rows] * 2.0, (rows,)


def _pick_backward(xp_, residuals, g):
  (rows,) = residuals
  hit = xp_.astype((rows % 4)[:, None] == xp_.arange(4), g.dtype)  # One-hot rows of x.
  return (hit.mT @ g) * 2.0, None


PICK_ROWS = cg.OpDef("tensorflow_array_pick_rows", _pick_forward, _pick_backward,
                     nondiff=("rows",),
                     sample=lambda rng: (rng.standard_normal((4, 3)),
                                         np.array([2, -4, 2], np.int32)))


def test_integer_array_indexing_of_a_differentiable_array_checks_in_forward_mode():
  """``x[rows]`` (a repeated and a negative row): tangents and second order in every mode."""
  report = cg.cross_check([PICK_ROWS], backends=["tensorflow"], dtypes=["float32"],
                          modes=["eager", "graph", "jit"], special=False)
  assert report.ok, report
  ran = {(r.mode, str(r.check)) for r in report.rows if r.ok}
  assert {(m, c) for m in ("eager", "graph", "jit") for c in ("jvp", "second_order")} <= ran


def test_array_object_cost_quick_run_writes_its_table(tmp_path):
  """benchmarks/tensorflow_array_overhead.py: one row per op, with its ratio."""
  from crossgrad.benchmarks import tensorflow_array_overhead  # pylint: disable=g-import-not-at-top
  payload = tensorflow_array_overhead.run(ops=["leaky_relu"], budget_s=0.05,
                                          json_path=str(tmp_path / "tf.json"))
  (row,) = payload["rows"]
  assert row["op"] == "leaky_relu" and row["elements"] == 1000 and row["ratio"] > 0
  assert (tmp_path / "tf.json").exists()
