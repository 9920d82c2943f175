"""crossgrad.tf1: the legacy TF1 graph (a real PyFunc under gradient_override_map) is
the oracle for the drop-in py_func in TF2 and for the ported op in TF2 and JAX."""

import gc

import jax
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import ops as tf_ops

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad import tf1
from crossgrad.tf1 import drop_in

import legacy_programs

ADD = legacy_programs.load("legacy_add")
SQUARE_CUBE = legacy_programs.load("legacy_square_cube")
TWO = legacy_programs.load("legacy_two_outputs")
F64 = legacy_programs.load("legacy_float64_nested")
INT = legacy_programs.load("legacy_int_inputs")
SEED_SQUARE_GRAD = getattr(SQUARE_CUBE, "_MySquareGrad")
SEED_CUBE_GRAD = getattr(SQUARE_CUBE, "_MyCubeGrad")


def _arrays(seed, n, shape=(2, 3), dtype=np.float32):
  rng = np.random.default_rng(seed)
  return [rng.standard_normal(shape).astype(dtype) for _ in range(n)]


def _seed_formula(c, k, d, g):
  """Seeds 000/003: ((c + k + d) g, d g, (c + k) g)."""
  e = c + k
  return [(e + d) * g, d * g, e * g]


def _legacy_graph_add(c, k, d, g):
  """The seed's own program (random-name RegisterGradient) in a tf.compat.v1 graph."""
  graph = tf.Graph()
  with graph.as_default():
    xs = [tf.compat.v1.placeholder(tf.float32, x.shape) for x in (c, k, d)]
    e = ADD.add_grad(*xs, graph)[0]
    grads = tf.gradients(e, xs, grad_ys=tf.constant(g))
    with tf.compat.v1.Session(graph=graph) as session:
      return session.run(grads, dict(zip(xs, (c, k, d))))


def _drop_in_grads(mode, func, grad, inputs, cotangents, Tout, n_outputs=1):
  """Gradients through crossgrad.tf1.py_func in 'eager', 'function' or 'graph' mode."""
  if mode == "graph":
    return tf1.legacy_vjp(func, grad, inputs, cotangents, Tout)[1]

  def run(xs, gs):
    with tf.GradientTape() as tape:
      tape.watch(xs)
      outputs = tf1.py_func(func, xs, Tout, name="under_test", grad=grad)
    return tape.gradient(outputs[:n_outputs], xs, output_gradients=gs[:n_outputs])

  if mode == "function":
    run = tf.function(run, autograph=False)
  grads = run([tf.constant(x) for x in inputs], [tf.constant(g) for g in cotangents])
  return [g.numpy() for g in grads]


MODES = ("eager", "function", "graph")


def test_legacy_oracle_is_the_seed_formula():
  c, k, d, g = _arrays(0, 4)
  for got, want in zip(_legacy_graph_add(c, k, d, g), _seed_formula(c, k, d, g)):
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_drop_in_matches_legacy_graph(mode):
  c, k, d, g = _arrays(1, 4)
  oracle = _legacy_graph_add(c, k, d, g)
  got = _drop_in_grads(mode, ADD.forward_func, ADD.backprop_func, [c, k, d], [g],
                       [np.float32])
  for a, b in zip(got, oracle):
    np.testing.assert_allclose(a, b, rtol=1e-6)


def _legacy_graph_two_outputs(x, y, cotangents, used):
  graph = tf.Graph()
  with graph.as_default():
    xs = [tf.compat.v1.placeholder(tf.float32, v.shape) for v in (x, y)]
    outputs = TWO.sort_pair(*xs)
    grads = tf.gradients(outputs[:used], xs, grad_ys=[tf.constant(c)
                                                      for c in cotangents[:used]])
    with tf.compat.v1.Session(graph=graph) as session:
      return session.run(grads, dict(zip(xs, (x, y))))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("used", (2, 1))  # 1: the unused output gets zeros, as in TF1.
def test_several_outputs_match_legacy_graph(mode, used):
  x, y, g1, g2 = _arrays(2, 4)
  oracle = _legacy_graph_two_outputs(x, y, [g1, g2], used)
  low = (x <= y).astype(np.float32)  # Each gradient goes to the input that won.
  g2 = g2 if used == 2 else np.zeros_like(g2)
  expected = [g1 * low + g2 * (1 - low), g1 * (1 - low) + g2 * low]
  for a, b in zip(oracle, expected):
    np.testing.assert_allclose(a, b, rtol=1e-6)
  if mode == "graph":
    got = tf1.legacy_vjp(TWO.sorted_pair, TWO.sorted_pair_grad, [x, y], [g1, g2])[1]
  else:
    got = _drop_in_grads(mode, TWO.sorted_pair, TWO.sorted_pair_grad, [x, y], [g1, g2],
                         [tf.float32, tf.float32], n_outputs=used)
  for a, b in zip(got, oracle):
    np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_wrong_number_of_gradients_names_the_function(mode):
  c, k, d, g = _arrays(3, 4)
  with pytest.raises(cg.CrossgradError, match=r"wrong_count_grad.*expected 3.*got 2"):
    _drop_in_grads(mode, ADD.forward_func, ADD.wrong_count_grad, [c, k, d], [g],
                   [np.float32])


def test_wrong_number_of_gradients_in_a_port():
  op = tf1.port("tf1_test_wrong_count", ADD.forward_func, ADD.wrong_count_grad,
                gradient="declared", register=False)
  c, k, d, g = _arrays(4, 4)
  _, vjp_fn = cg.numpy.vjp(op, c, k, d)
  with pytest.raises(cg.CrossgradError, match=r"tf1_test_wrong_count.*wrong_count_grad"):
    vjp_fn(g)


def test_no_random_names_and_no_state_left_behind():
  gc.collect()
  registered = len(tf_ops._gradient_registry.list())  # pylint: disable=protected-access
  tables = len(drop_in._GRADS)  # pylint: disable=protected-access
  c, k, d, g = _arrays(5, 4)
  for _ in range(3):
    tf1.legacy_vjp(ADD.forward_func, ADD.backprop_func, [c, k, d], [g])
  gc.collect()
  assert len(tf_ops._gradient_registry.list()) == registered  # pylint: disable=protected-access
  assert len(drop_in._GRADS) == tables  # pylint: disable=protected-access
  # The seed's helper, by contrast, registers a new random name on every call.
  _legacy_graph_add(c, k, d, g)
  assert len(tf_ops._gradient_registry.list()) == registered + 1  # pylint: disable=protected-access


def test_variables_get_gradients_in_eager_mode():
  """The seeds feed tf.Variables into the py_func."""
  c, k, d, g = _arrays(7, 4)
  variables = [tf.Variable(x) for x in (c, k, d)]
  with tf.GradientTape() as tape:
    e = tf1.py_func(ADD.forward_func, variables, [tf.float32], grad=ADD.backprop_func)[0]
  grads = tape.gradient(e, variables, output_gradients=tf.constant(g))
  for got, want in zip(grads, _legacy_graph_add(c, k, d, g)):
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_op_graph_is_a_clear_error_outside_tf1():
  def reads_graph(op, grad):
    del grad
    return op.graph

  x = tf.constant([1.0, 2.0])
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = tf1.py_func(np.square, [x], tf.float32, grad=reads_graph)
  with pytest.raises(cg.CrossgradError, match=r"op\.graph"):
    tape.gradient(y, x)


# port: the legacy pair as a registry op, with a JAX twin.


def _sample3(rng):
  return tuple(rng.standard_normal((4, 3)) for _ in range(3))


def _fixed_cube_grad(op, grad):
  """Seed 001's cube grad (a py_func inside the gradient), times the upstream grad."""
  x = op.inputs[0]
  return tf1.py_func(lambda a: np.power(a, 2) * 3, [x], [x.dtype], name="cube_grad")[0] * grad


def _sample1(rng):
  return (rng.standard_normal((5,)) + 2.0,)


PORTS = {
    "tf1_test_add": dict(forward=ADD.forward_func, grad=ADD.backprop_func,
                         gradient="declared", sample=_sample3),
    "tf1_test_square": dict(forward=np.square, grad=SEED_SQUARE_GRAD,
                            sample=_sample1, input_names=("x",)),
    "tf1_test_cube": dict(forward=lambda a: np.power(a, 3), grad=_fixed_cube_grad,
                          sample=_sample1),
}


@pytest.mark.parametrize("name", sorted(PORTS))
def test_ported_op_passes_the_cross_check(name):
  op = tf1.port(name, register=False, **PORTS[name])
  report = cg.cross_check([op], dtypes=("float32", "float64"))
  assert report.ok, report.table(failures_only=True)
  skipped = [r for r in report.rows if r.check == "skipped"  # numpy's: variants not taken.
             and r.backend not in ("torch", "numpy")]
  by_mode = {r.mode: r.note for r in skipped if r.note.startswith("unsupported by the op")}
  assert sorted(by_mode) == ["jit", "vectorized_map"]
  assert "XLA cannot compile" in by_mode["jit"] and "pfor" in by_mode["vectorized_map"]
  # NumPy forwards: no forward mode (legacy gradients need not be linear in g) and no
  # second order (residuals from host code), in both frameworks and every mode.
  higher = [r for r in skipped if not r.note.startswith("unsupported by the op")]
  assert {(r.backend, r.mode, r.note.split(":")[0]) for r in higher} == {
      (b, m, k) for b, modes in (("tensorflow", ("eager", "graph")), ("jax", ("eager", "jit")))
      for m in modes for k in ("jvp", "second_order")}
  assert all("need not be linear" in r.note for r in higher if r.note.startswith("jvp"))
  # torch (where installed) reports every row as skipped: ports reach legacy code through
  # TF and JAX only.
  assert all(r.check == "skipped" and "does not bridge" in r.note
             for r in report.rows if r.backend == "torch")


def test_port_with_several_outputs_matches_legacy_graph():
  op = tf1.port("tf1_test_two_outputs", TWO.sorted_pair, TWO.sorted_pair_grad, num_outputs=2,
                sample=lambda rng: tuple(rng.standard_normal((3, 2)) for _ in range(2)),
                register=False)
  # The sample's rows: the legacy gradient is written for inputs of one shape (it sums
  # nothing back where one broadcasts), which the variant rows would flag.
  assert cg.cross_check([op], dtypes=("float32", "float64"), variants="none").ok
  x, y, g1, g2 = _arrays(8, 4)
  oracle_out, oracle_grads = tf1.legacy_vjp(TWO.sorted_pair, TWO.sorted_pair_grad, [x, y],
                                            [g1, g2])
  for backend in ("tensorflow", "jax"):
    outputs, grads = base.load(backend).evaluate(op, {}, [x, y], [g1, g2], mode="eager")
    for a, b in zip(list(outputs) + list(grads), oracle_out + oracle_grads):
      np.testing.assert_allclose(a, b, rtol=1e-6)


def _masked(x, mask):
  return (x * mask).astype(x.dtype)


def _masked_grad(op, grad):
  x, mask = op.inputs[0], op.inputs[1]
  return grad * tf.cast(mask, x.dtype), None


@pytest.mark.parametrize("jax_backward", ("call_tf", "callback"))
def test_port_with_an_integer_input(jax_backward):
  op = tf1.port("tf1_test_masked", _masked, _masked_grad, nondiff=("mask",),
                jax_backward=jax_backward,
                sample=lambda rng: (rng.standard_normal((5,)), rng.integers(0, 2, (5,))),
                register=False)
  report = cg.cross_check([op], dtypes=("float32",))
  assert report.ok, report.table(failures_only=True)
  x, mask = np.linspace(-1.0, 1.0, 5).astype(np.float32), np.array([1, 0, 1, 1, 0], np.int32)
  _, grads = base.load("jax").evaluate(op, {}, [x, mask], [np.ones(5, np.float32)], mode="jit")
  np.testing.assert_array_equal(grads[0], mask.astype(np.float32))
  assert grads[1] is None


def test_port_under_a_tf_function_with_an_unknown_batch_dimension():
  op = tf1.port("tf1_test_square_signature", np.square, SEED_SQUARE_GRAD, input_names=("x",),
                register=False)
  square = cg.tensorflow.get(op)

  @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
  def value_and_grad(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = square(x)
    assert y.shape.as_list() == [None, 2]
    return y, tape.gradient(y, x)

  x = np.arange(6, dtype=np.float32).reshape(3, 2)
  y, g = value_and_grad(x)
  np.testing.assert_array_equal(y.numpy(), x**2)
  np.testing.assert_array_equal(g.numpy(), 2 * x)


def test_registered_port_is_checked_by_name():
  tf1.port("tf1_test_registered_add", **PORTS["tf1_test_add"])
  try:
    assert cg.cross_check(["tf1_test_registered_add"], dtypes=("float32",)).ok
    # The same legacy pair again is the same op; another pair under the name is not.
    tf1.port("tf1_test_registered_add", **PORTS["tf1_test_add"])
    with pytest.raises(cg.CrossgradError, match="already registered"):
      tf1.port("tf1_test_registered_add", **PORTS["tf1_test_cube"])
  finally:
    cg.unregister("tf1_test_registered_add")


@pytest.mark.parametrize("jax_backward", ("call_tf", "callback"))
@pytest.mark.parametrize("jit", (False, True))
def test_ported_jax_gradients_match_legacy_graph(jax_backward, jit):
  op = tf1.port("tf1_test_add_jax", ADD.forward_func, ADD.backprop_func,
                gradient="declared", jax_backward=jax_backward, register=False)
  c, k, d, g = _arrays(6, 4)
  oracle_out, oracle_grads = tf1.legacy_vjp(ADD.forward_func, ADD.backprop_func,
                                            [c, k, d], [g])
  fn = cg.jax.get(op)

  def vjp(c, k, d, g):
    out, vjp_fn = jax.vjp(fn, c, k, d)
    return out, vjp_fn(g)

  out, grads = (jax.jit(vjp) if jit else vjp)(c, k, d, g)
  np.testing.assert_allclose(out, oracle_out[0], rtol=1e-6)
  for a, b in zip(grads, oracle_grads):
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_auto_picks_native_or_a_callback_where_the_grad_calls_py_func():
  cube = tf1.port("tf1_test_cube_auto", register=False, **PORTS["tf1_test_cube"])
  square = tf1.port("tf1_test_square_auto", register=False, **PORTS["tf1_test_square"])
  x = np.linspace(1.0, 2.0, 5).astype(np.float32)
  for op, derivative in ((cube, 3 * x**2), (square, 2 * x)):
    g = jax.jit(jax.grad(lambda v, op=op: cg.jax.get(op)(v).sum()))(x)
    np.testing.assert_allclose(g, derivative, rtol=1e-6)
  flat = [x] * 3  # The input, the output and the upstream gradient.
  assert cube.forward.port.jax_strategy(flat)[0] == "callback"
  assert square.forward.port.jax_strategy(flat)[0] == "native"


def _reference_fails(report) -> bool:
  """Only the reference's finite differences fail: on the sample (its fd row first) and on
  its variants; every backend agrees with the (wrong) reference."""
  failing = report.failures
  return bool(failing) and failing[0].check == "fd" and {
      (str(r.check), r.backend) for r in failing[1:]} == {("variant", "numpy")}


def test_planted_wrong_gradient_fails_the_cross_check():
  def wrong_square_grad(op, grad):
    return grad * 3 * op.inputs[0]

  op = tf1.port("tf1_test_wrong_square", np.square, wrong_square_grad, sample=_sample1,
                input_names=("x",), register=False)
  report = cg.cross_check([op], dtypes=("float32",))
  assert _reference_fails(report)


def test_seed_cube_grad_ignores_the_upstream_gradient(monkeypatch):
  """Seed 001's _MyCubeGrad is right only for an all-ones upstream gradient."""
  # The migration step: the module's own helper becomes the drop-in (in TF2 eager the
  # old helper's `[0]` would index a bare tensor, not a list).
  monkeypatch.setattr(SQUARE_CUBE, "py_func", tf1.py_func)
  op = tf1.port("tf1_test_seed_cube", lambda a: np.power(a, 3), SEED_CUBE_GRAD,
                sample=_sample1, register=False)
  x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
  _, vjp_fn = cg.numpy.vjp(op, x)
  np.testing.assert_allclose(vjp_fn(np.ones_like(x))[0], [3.0, 12.0, 27.0, 48.0])
  assert _reference_fails(cg.cross_check([op], dtypes=("float32",)))


def test_forward_mode_of_a_port_is_refused_with_the_reason():
  """A legacy gradient (here one that ignores g, as the seed's cube grad) has no transpose."""
  op = tf1.port("tf1_test_no_jvp", lambda a: np.power(a, 3),
                lambda op, grad: [3.0 * op.inputs[0] ** 2], sample=_sample1, register=False)
  x = tf.constant([1.0, 2.0])
  with pytest.raises(cg.CrossgradError, match="tf1_test_no_jvp.*need not be linear"):
    with tf.autodiff.ForwardAccumulator(x, tf.ones(2)):
      cg.tensorflow.get(op)(x)
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    jax.jvp(cg.jax.get(op), (np.ones(2, np.float32),), (np.ones(2, np.float32),))
  # Reverse mode is unaffected in both frameworks.
  g = jax.grad(lambda v: cg.jax.get(op)(v).sum())(np.array([1.0, 2.0], np.float32))
  np.testing.assert_allclose(g, [3.0, 12.0])


# What cannot be ported.


def test_stateful_forward_is_refused():
  with pytest.raises(cg.CrossgradError, match="stateful NumPy forward cannot be ported"):
    tf1.port("tf1_test_stateful", np.square, SEED_SQUARE_GRAD, stateful=True,
             register=False)


def test_random_forward_is_detected_as_stateful():
  rng = np.random.default_rng(0)

  def bernoulli(p):
    return (rng.random(p.shape) < p).astype(p.dtype)

  def straight_through(op, grad):
    del op
    return grad

  with pytest.raises(cg.CrossgradError, match=r"stateful.*bernoulli"):
    tf1.port("tf1_test_bernoulli", bernoulli, straight_through, gradient="declared",
             sample=lambda r: (r.random((50,)),), register=False)


def test_grad_reading_graph_collections_is_refused():
  def collection_grad(op, grad):
    scale = tf.compat.v1.get_collection("grad_scale")[0]
    return grad * scale * op.inputs[0]

  with pytest.raises(cg.CrossgradError, match=r"collection_grad.*graph state.*get_collection"):
    tf1.port("tf1_test_collections", np.square, collection_grad, register=False)


# More legacy py_func programs: float64 with a py_func inside the gradient, int32 inputs.


def _sigmoid(x):
  return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("mode", ("eager", "function"))
def test_float64_py_func_whose_gradient_calls_py_func(mode, monkeypatch):
  x, g = _arrays(9, 2, shape=(3, 4), dtype=np.float64)
  oracle = legacy_programs.graph_vjp(F64.softplus, [x], g)
  np.testing.assert_allclose(oracle[1][0], g * _sigmoid(x), rtol=1e-12)
  monkeypatch.setattr(F64, "py_func", tf1.py_func)  # The migration: the helper is the drop-in.
  y, grads = _drop_in_vjp(mode, F64.softplus, [x], g)
  np.testing.assert_allclose(y, oracle[0], rtol=1e-12)
  np.testing.assert_allclose(grads[0], oracle[1][0], rtol=1e-12)
  forward, grad = F64._softplus, F64._softplus_grad  # pylint: disable=protected-access
  op = tf1.port("tf1_test_softplus", forward, grad,
                sample=lambda rng: (rng.standard_normal((3, 4)),), register=False)
  report = cg.cross_check([op], dtypes=("float64",))
  assert report.ok, report.table(failures_only=True)
  assert op.forward.port.jax_strategy([x, x, g])[0] == "callback"
  _, jax_grads = base.load("jax").evaluate(op, {}, [x], [g], mode="jit")
  np.testing.assert_allclose(jax_grads[0], oracle[1][0], rtol=1e-12)


def _drop_in_vjp(mode, build, inputs, cotangent):
  def run(xs, c):
    with tf.GradientTape() as tape:
      tape.watch(xs)
      y = build(*xs)
    return y, tape.gradient(y, xs, output_gradients=c)

  if mode == "function":
    run = tf.function(run, autograph=False)
  y, grads = run([tf.constant(x) for x in inputs], tf.constant(cotangent))
  return y.numpy(), [None if v is None else v.numpy() for v in grads]


@pytest.mark.parametrize("mode", ("eager", "function"))
def test_int32_inputs(mode, monkeypatch):
  rng = np.random.default_rng(10)
  params = rng.standard_normal((5, 3)).astype(np.float32)
  ids = np.array([4, 0, 4, 2], np.int32)
  g = rng.standard_normal((4, 3)).astype(np.float32)
  expected = np.zeros_like(params)
  np.add.at(expected, ids, g)
  oracle = legacy_programs.graph_vjp(INT.embed, [params, ids], g)
  np.testing.assert_allclose(oracle[1][0], expected, rtol=1e-6)
  assert oracle[1][1] is None  # The ids get no gradient.
  monkeypatch.setattr(INT, "py_func", tf1.py_func)
  y, grads = _drop_in_vjp(mode, INT.embed, [params, ids], g)
  np.testing.assert_array_equal(y, params[ids])
  np.testing.assert_allclose(grads[0], expected, rtol=1e-6)
  assert grads[1] is None
  op = tf1.port("tf1_test_lookup", INT.lookup, INT.lookup_grad, nondiff=("ids",),
                output_shapes=lambda p, i: [i + p[1:]],
                sample=lambda r: (r.standard_normal((5, 3)), r.integers(0, 5, (4,))),
                register=False)
  report = cg.cross_check([op], dtypes=("float32",))
  assert report.ok, report.table(failures_only=True)
  assert op.forward.port.jax_strategy([params, ids, params[ids], g])[0] == "native"
  _, jax_grads = base.load("jax").evaluate(op, {}, [params, ids], [g], mode="jit")
  np.testing.assert_allclose(jax_grads[0], expected, rtol=1e-6)


# A graph with the drop-in survives import_graph_def.


def test_drop_in_graph_survives_import_graph_def():
  c, k, d, g = _arrays(11, 4)
  graph = tf.Graph()
  with graph.as_default():
    xs = [tf.compat.v1.placeholder(tf.float32, c.shape, name=n) for n in "ckd"]
    tf.identity(tf1.py_func(ADD.forward_func, xs, [tf.float32], grad=ADD.backprop_func)[0],
                name="e")
  copy = tf.Graph()
  with copy.as_default():
    xs = [tf.compat.v1.placeholder(tf.float32, c.shape) for _ in "ckd"]
    e, = tf.import_graph_def(graph.as_graph_def(), input_map={f"{n}:0": x
                                                              for n, x in zip("ckd", xs)},
                             return_elements=["e:0"])
    grads = tf.gradients(e, xs, grad_ys=tf.constant(g))
    with tf.compat.v1.Session(graph=copy) as session:
      got = session.run(grads, dict(zip(xs, (c, k, d))))
  for a, b in zip(got, _seed_formula(c, k, d, g)):
    np.testing.assert_allclose(a, b, rtol=1e-6)
  # Once the graph that made the py_func is gone, its gradient is a clear error.
  graph_def = graph.as_graph_def()
  del graph
  gc.collect()
  with tf.Graph().as_default():
    xs = [tf.compat.v1.placeholder(tf.float32, c.shape) for _ in "ckd"]
    e, = tf.import_graph_def(graph_def, input_map={f"{n}:0": x for n, x in zip("ckd", xs)},
                             return_elements=["e:0"])
    with pytest.raises(cg.CrossgradError, match="not known in this process"):
      tf.gradients(e, xs)


# XLA: host code is refused with a CrossgradError naming the op and the reason.


def test_host_code_is_refused_under_xla():
  c, k, d, _ = _arrays(12, 4)
  add = cg.tensorflow.get(tf1.port("tf1_test_add_xla", ADD.forward_func, ADD.backprop_func,
                                   gradient="declared", register=False))
  with pytest.raises(cg.CrossgradError, match=r"tf1_test_add_xla.*XLA.*NumPy code"):
    tf.function(add, jit_compile=True)(c, k, d)
  square = lambda x: tf1.py_func(np.square, [x], [tf.float32], name="under_xla",  # noqa: E731
                                 grad=SEED_SQUARE_GRAD)[0]
  with pytest.raises(cg.CrossgradError, match=r"under_xla.*XLA.*NumPy code"):
    tf.function(square, jit_compile=True)(c)

  def host_grad(op, grad):
    return grad * tf1.py_func(np.cos, [op.inputs[0]], [grad.dtype])[0]

  op = tf1.port("tf1_test_sign_host_grad", "Sign", host_grad, register=False)
  assert "calls py_func" in op.unsupported_modes["tensorflow:jit"]
  sign = cg.tensorflow.get(op)

  def value_and_grad(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = sign(x)
    return tape.gradient(y, x)

  np.testing.assert_allclose(value_and_grad(tf.constant(c)).numpy(), np.cos(c), rtol=1e-6)
  with pytest.raises(cg.CrossgradError, match=r"tf1_test_sign_host_grad.*XLA.*calls py_func"):
    tf.function(value_and_grad, jit_compile=True)(c)


# JAX twins of host ports: vmap works; second derivatives are a clear error.


def test_host_port_twins_vmap_and_refuse_second_derivatives():
  op = tf1.port("tf1_test_square_host", np.square, SEED_SQUARE_GRAD, input_names=("x",),
                register=False)
  square = cg.jax.get(op)
  xs = _arrays(13, 1, shape=(4, 3))[0]
  grad = jax.grad(lambda v: square(v).sum())
  np.testing.assert_allclose(jax.jit(jax.vmap(grad))(xs), 2 * xs, rtol=1e-6)
  with pytest.raises(cg.CrossgradError,
                     match=r"tf1_test_square_host.*second derivatives.*NumPy forward"):
    jax.grad(lambda v: grad(v).sum())(xs[0])
  for how in ("call_tf", "callback"):
    op = tf1.port(f"tf1_test_square_{how}", "Identity", SEED_SQUARE_GRAD, jax_backward=how,
                  register=False)
    fn = cg.jax.get(op)
    grad = jax.grad(lambda v, fn=fn: fn(v).sum())
    np.testing.assert_allclose(jax.vmap(grad)(xs), 2 * xs, rtol=1e-6)
    with pytest.raises(cg.CrossgradError, match=rf"tf1_test_square_{how}.*second deriv"):
      jax.grad(lambda v, grad=grad: grad(v).sum())(xs[0])


def test_drop_in_in_a_keras_model():
  """Keras needs static shapes: set them on the drop-in's outputs, as TF1 code did."""
  import keras  # pylint: disable=g-import-not-at-top

  class PyFuncSquare(keras.layers.Layer):
    def call(self, x):
      y = tf1.py_func(np.square, [x], [tf.float32], grad=SEED_SQUARE_GRAD)[0]
      y.set_shape(x.shape)
      return y

  class TFSquare(keras.layers.Layer):
    def call(self, x):
      return tf.square(x)

  rng = np.random.default_rng(14)
  x, y = rng.standard_normal((16, 3)), rng.standard_normal((16, 1))
  weights = []
  for square in (PyFuncSquare, TFSquare):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), square(),
                              keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    weights.append(model.get_weights())
  for a, b in zip(*weights):
    np.testing.assert_allclose(a, b, rtol=1e-5)
