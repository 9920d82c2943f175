"""crossgrad.tf1.override_map and op-type ports against TF1 programs written the legacy way
(tests/testdata/legacy_*.py), run in tf.compat.v1 graphs with tf.gradients (the oracle)."""

import threading

import jax
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.ops import gen_nn_ops

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad import tf1
from crossgrad.tf1 import scan

import legacy_programs

MODES = ("eager", "function", "jit")
BINARIZED = legacy_programs.load("legacy_binarized")
DOREFA = legacy_programs.load("legacy_dorefa")
STE = legacy_programs.load("legacy_ste_ops")
GUIDED = legacy_programs.load("legacy_guided_backprop")
FLIP = legacy_programs.load("legacy_flip_gradient")
DEFUN = legacy_programs.load("legacy_defun")


def _arrays(seed, *shapes, dtype=np.float32):
  rng = np.random.default_rng(seed)
  return [(rng.standard_normal(s) * 1.5).astype(dtype) for s in shapes]


def tf2_vjp(build, inputs, cotangent, mode):
  """The migrated program with tf.GradientTape: eagerly, in a tf.function, under XLA."""
  def run(xs, g):
    with tf.GradientTape() as tape:
      tape.watch(xs)
      y = build(*xs)
    return y, tape.gradient(y, xs, output_gradients=g)

  if mode != "eager":
    run = tf.function(run, jit_compile=(mode == "jit"), autograph=False)
  y, grads = run([tf.constant(x) for x in inputs], tf.constant(cotangent))
  return y.numpy(), [g.numpy() for g in grads]


def assert_same(got, want, rtol=1e-5):  # XLA may reassociate float sums.
  (y, grads), (y0, grads0) = got, want
  np.testing.assert_allclose(y, y0, rtol=rtol)
  for a, b in zip(grads, grads0):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-7)


# The migrated programs: `graph.gradient_override_map` becomes `crossgrad.tf1.override_map`.


def binary_dense(x, w):
  def binarize(v):
    with tf1.override_map({"Sign": "Identity"}):
      return tf.sign(v)
  return tf.matmul(binarize(x), binarize(w))


def dorefa(bitW, bitA):
  def quantize(x, k):
    n = float(2 ** k - 1)
    with tf1.override_map({"Round": "Identity"}):
      return tf.round(x * n) / n

  def fw(x):
    if bitW == 1:
      E = tf.stop_gradient(tf.reduce_mean(tf.abs(x)))
      with tf1.override_map({"Sign": "Identity", "Mul": "Add"}):
        return tf.sign(x / E) * E
    x = tf.tanh(x)
    x = x / tf.reduce_max(tf.abs(x)) * 0.5 + 0.5
    return 2 * quantize(x, bitW) - 1

  return fw, lambda x: quantize(x, bitA)


@pytest.mark.parametrize("mode", MODES)
def test_binarized_net(mode):
  x, w, g = _arrays(0, (3, 5), (5, 4), (3, 4))
  oracle = legacy_programs.graph_vjp(BINARIZED.binary_dense, [x, w], g)
  # Sign passes the gradient straight through: d/dx = g sign(w)^T.
  np.testing.assert_allclose(oracle[1][0], g @ np.sign(w).T, rtol=1e-6)
  assert_same(tf2_vjp(binary_dense, [x, w], g, mode), oracle)
  # In a tf.compat.v1 graph too, as a drop-in for graph.gradient_override_map.
  assert_same(legacy_programs.graph_vjp(binary_dense, [x, w], g), oracle)


def test_binarized_weights_as_variables():
  w = tf.Variable([[-1.0, 2.0], [0.5, -0.1]])

  @tf.function(jit_compile=True)
  def grad():
    with tf.GradientTape() as tape:
      with tf1.override_map({"Sign": "Identity"}):
        loss = tf.reduce_sum(tf.sign(w) * 3.0)
    return tape.gradient(loss, w)

  np.testing.assert_array_equal(grad().numpy(), np.full((2, 2), 3.0))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bits", ((1, 2), (2, 3)))
def test_dorefa_quantizers(mode, bits):
  x, g = _arrays(1, (4, 6), (4, 6))
  legacy_fw = lambda v: DOREFA.get_dorefa(*bits)[0](v)  # noqa: E731 (the graph must exist)
  legacy_fa = lambda v: DOREFA.get_dorefa(*bits)[1](v)  # noqa: E731
  fw, fa = dorefa(*bits)
  oracle_w = legacy_programs.graph_vjp(legacy_fw, [x], g)
  if bits[0] == 1:  # Mul -> Add, Sign -> Identity, RealDiv by E: the gradient is g / E.
    np.testing.assert_allclose(oracle_w[1][0], g / np.mean(np.abs(x)), rtol=1e-6)
  assert_same(tf2_vjp(fw, [x], g, mode), oracle_w)
  assert_same(tf2_vjp(fa, [np.abs(x) / 3], g, mode), legacy_programs.graph_vjp(legacy_fa, [np.abs(x) / 3], g))


# Bodies call TF by attribute inside the scope, as the legacy code does (a function object
# taken before the scope opened, `relu = tf.nn.relu`, keeps TF's gradient: see docs/tf1.md).
STE_PROGRAMS = {
    "floor_ste": ({"Floor": "Identity"}, lambda x: tf.floor(x)),
    "ceil_ste": ({"Ceil": "Identity"}, lambda x: tf.math.ceil(x)),
    "half_precision_ste": ({"Cast": "LegacyHalf"},
                           lambda x: tf.cast(tf.cast(x, tf.float16), x.dtype)),
    "max_to_first": ({"Maximum": "LegacyPassFirst"}, lambda x, y: tf.maximum(x, y)),
    "min_to_first": ({"Minimum": "LegacyPassFirst"}, lambda x, y: tf.minimum(x, y)),
    "leaky_stop_gradient": ({"StopGradient": "LegacyHalf"}, lambda x: tf.stop_gradient(x)),
    "half_relu": ({"Relu": "LegacyHalf"}, lambda x: tf.nn.relu(x)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(STE_PROGRAMS))
def test_straight_through_programs(name, mode):
  mapping, body = STE_PROGRAMS[name]
  legacy = getattr(STE, name)
  n = len(tf1.OP_TYPES[next(iter(mapping))].inputs)
  inputs, g = _arrays(2, *[(3, 4)] * n), _arrays(3, (3, 4))[0]
  oracle = legacy_programs.graph_vjp(legacy, inputs, g)
  assert not np.allclose(oracle[1][0], 0)  # The override is in force in the oracle.

  def migrated(*xs):
    with tf1.override_map(mapping):
      return body(*xs)

  assert_same(tf2_vjp(migrated, inputs, g, mode), oracle, rtol=1e-3 if "half" in name else 1e-6)


def test_add_covers_tf2s_addv2():
  """TF 2's tf.add and + make AddV2, which a legacy {"Add": ...} no longer reaches even in
  a tf.compat.v1 graph; override_map's "Add" means both, as in TF1."""
  x, y, g = _arrays(4, (2, 3), (2, 3), (2, 3))
  with tf.GradientTape() as tape:
    xs = [tf.constant(x), tf.constant(y)]
    tape.watch(xs)
    with tf1.override_map({"Add": "LegacyPassFirst"}):
      out = tf.add(xs[0], xs[1]) + xs[0]
  gx, gy = tape.gradient(out, xs, output_gradients=tf.constant(g))
  np.testing.assert_allclose(gx.numpy(), g)  # Each add sends all to its first input.
  np.testing.assert_allclose(gy.numpy(), 0 * g)  # (TF's own gradients: 2 g and g.)


@pytest.mark.parametrize("mode", MODES)
def test_gradient_reversal_and_clip_identity(mode):
  x, g = _arrays(5, (3, 4), (3, 4))
  flip_oracle = legacy_programs.graph_vjp(lambda v: FLIP.flip_gradient(v, l=0.7), [x], g)
  np.testing.assert_allclose(flip_oracle[1][0], -0.7 * g, rtol=1e-6)

  def flip(v, l=0.7):
    with tf1.override_map({"Identity": lambda op, grad: [tf.negative(grad) * l]}):
      return tf.identity(v)

  assert_same(tf2_vjp(flip, [x], g, mode), flip_oracle)

  def clip(v):
    with tf1.override_map({"Identity": "ClipGradient"}):
      return tf.identity(v)

  assert_same(tf2_vjp(clip, [x], g, mode), legacy_programs.graph_vjp(FLIP.clip_gradient, [x], g))


def _guided_relu_grad(op, grad):
  return tf.where(0. < grad, gen_nn_ops.relu_grad(grad, op.outputs[0]), tf.zeros_like(grad))


def _saliency(net, images, label):
  x = tf.constant(images)
  with tf.GradientTape() as tape:
    tape.watch(x)
    logit = net(x)[:, label]
  return tape.gradient(logit, x).numpy()


def test_guided_backprop_on_an_imported_trained_graph():
  graph_def = GUIDED.trained_graph_def()
  images = _arrays(6, (5, 4))[0]
  oracle = GUIDED.saliency(graph_def, images, label=1)
  assert (oracle != 0).any()

  def import_net(x):
    return tf.import_graph_def(graph_def, input_map={"x:0": x}, return_elements=["logits:0"])[0]

  spec = [tf.TensorSpec([None, 4], tf.float32)]
  for grad in ("GuidedRelu", _guided_relu_grad):  # The registered name, or the function.
    with tf1.override_map({"Relu": grad}):
      net = tf.compat.v1.wrap_function(import_net, spec)
    np.testing.assert_allclose(_saliency(net, images, 1), oracle, rtol=1e-5)
  # The plain import keeps ReLU's own gradient, which differs.
  assert not np.allclose(_saliency(tf.compat.v1.wrap_function(import_net, spec), images, 1),
                         oracle)


def test_guided_backprop_in_a_tf1_graph():
  """override_map in a tf.compat.v1 graph, as a drop-in for graph.gradient_override_map."""
  graph_def = GUIDED.trained_graph_def()
  images = _arrays(7, (3, 4))[0]
  graph = tf.Graph()
  with graph.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4])
    with tf1.override_map({"Relu": _guided_relu_grad}):
      logits, = tf.import_graph_def(graph_def, input_map={"x:0": x},
                                    return_elements=["logits:0"])
    saliency = tf.gradients(logits[:, 2], x)[0]
    with tf.compat.v1.Session(graph=graph) as session:
      got = session.run(saliency, {x: images})
  np.testing.assert_allclose(got, GUIDED.saliency(graph_def, images, label=2), rtol=1e-5)


def test_decorator_nesting_and_restoring():
  x = tf.constant([-1.5, 0.5, 2.0])

  @tf1.override_map({"Sign": "Identity"})
  def outer(v):
    with tf1.override_map({"Sign": lambda op, grad: 3.0 * grad}):
      inner = tf.sign(v)
    return tf.sign(v) + inner

  with tf.GradientTape() as tape:
    tape.watch(x)
    y = outer(x)
  np.testing.assert_allclose(tape.gradient(y, x).numpy(), [4.0, 4.0, 4.0])
  # Outside every scope the TF functions are TF's own again.
  assert tf.sign is tf.math.sign and tf.nn.relu.__module__.endswith("gen_nn_ops")
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = tf.sign(x)
  np.testing.assert_allclose(tape.gradient(y, x).numpy(), [0.0, 0.0, 0.0])


def test_other_threads_keep_tfs_gradients():
  x = tf.constant([1.0, -2.0])
  seen = []

  def other_thread():
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = tf.sign(x)
    seen.append(tape.gradient(y, x).numpy())

  with tf1.override_map({"Sign": "Identity"}):
    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
  np.testing.assert_array_equal(seen[0], [0.0, 0.0])


def test_bad_maps_are_clear_errors():
  with pytest.raises(cg.CrossgradError, match=r"'Conv2D'.*one of \['Add'"):
    tf1.override_map({"Conv2D": "Identity"})
  with pytest.raises(cg.CrossgradError, match=r"PyFunc.*crossgrad\.tf1\.py_func"):
    tf1.override_map({"PyFunc": "Identity"})
  with pytest.raises(cg.CrossgradError, match=r"no gradient is registered.*NoSuchGrad"):
    tf1.override_map({"Sign": "NoSuchGrad"})


# Ports of op-type overrides: native ops in every backend.


def _no_host_code(op, *inputs):
  """Neither the TF XLA graph nor the JAX gradient's jaxpr holds a host call."""
  fn = cg.jax.get(op)
  jaxpr = str(jax.make_jaxpr(jax.grad(lambda *v: fn(*v).sum(), argnums=0))(*inputs))
  assert "callback" not in jaxpr and "call_tf" not in jaxpr, jaxpr
  tf_fn = cg.tensorflow.get(op)

  def tf_grad(*v):
    with tf.GradientTape() as tape:
      tape.watch(v)
      y = tf.reduce_sum(tf_fn(*v))
    return tape.gradient(y, v)

  graph = tf.function(tf_grad, jit_compile=True).get_concrete_function(
      *[tf.TensorSpec(x.shape, x.dtype) for x in inputs]).graph
  assert not {o.type for o in graph.get_operations()} & set(tf1.PYFUNC_TYPES)


def _pass_first(op, grad):
  return grad, tf.zeros_like(op.inputs[1])


PORT_GRADS = {
    "Sign": "Identity", "Round": "Identity", "Floor": "Identity", "Ceil": "Identity",
    "Relu": _guided_relu_grad, "Identity": "ClipGradient", "StopGradient": "Identity",
    "Cast": "Identity", "Mul": "Add", "Add": _pass_first, "AddV2": "Add",
    "Maximum": _pass_first, "Minimum": _pass_first,
}


def test_every_op_type_has_a_port_case_and_the_scanner_knows_it():
  assert sorted(PORT_GRADS) == sorted(tf1.OP_TYPES)
  assert scan.OP_TYPES is tf1.OP_TYPES


@pytest.mark.parametrize("op_type", sorted(PORT_GRADS))
def test_op_type_ports_are_native_and_pass_the_cross_check(op_type):
  n = len(tf1.OP_TYPES[op_type].inputs)
  op = tf1.port(f"tf1_test_port_{op_type}", op_type, PORT_GRADS[op_type],
                sample=lambda rng: tuple(rng.standard_normal((3, 4)) for _ in range(n)),
                register=False)
  report = cg.cross_check([op], dtypes=("float32", "float64"))
  assert report.ok, report.table(failures_only=True)
  # tensorflow:jit included; torch (where installed) skips TF1 ports (tf1/port.py); forward
  # mode is declared unsupported for ports (legacy gradients need not be linear in g).
  assert not [r for r in report.rows if r.check == "skipped"  # numpy: variants not taken.
              and r.backend not in ("torch", "numpy")
              and not r.note.startswith("jvp: a legacy gradient need not be linear")]
  _no_host_code(op, *_arrays(8, *[(3, 4)] * n))


def test_ported_overrides_match_the_tf1_programs_in_jax():
  x, w, g = _arrays(9, (3, 5), (5, 4), (3, 4))
  sign = cg.jax.get(tf1.port("tf1_test_binarize", "Sign", "Identity", register=False))
  _, vjp = jax.vjp(jax.jit(lambda a, b: sign(a) @ sign(b)), x, w)
  got = vjp(g)
  for a, b in zip(got, legacy_programs.graph_vjp(BINARIZED.binary_dense, [x, w], g)[1]):
    np.testing.assert_allclose(a, b, rtol=1e-6)
  reverse = cg.jax.get(tf1.port("tf1_test_flip", "Identity",
                                lambda op, grad: [tf.negative(grad) * 0.7], register=False))
  got = jax.jit(jax.grad(lambda v: (reverse(v) * g[:, :4]).sum()))(x[:, :4])
  np.testing.assert_allclose(got, legacy_programs.graph_vjp(lambda v: FLIP.flip_gradient(v, l=0.7),
                                          [x[:, :4]], g[:, :4])[1][0], rtol=1e-6)


def test_guided_relu_port_vmaps_and_differentiates_twice():
  relu = cg.jax.get(tf1.port("tf1_test_guided", "Relu", _guided_relu_grad, register=False))
  xs, gs = _arrays(10, (6, 5), (6, 5))

  def saliency(x, g):
    return jax.vjp(relu, x)[1](g)[0]

  batched = jax.jit(jax.vmap(saliency))(xs, gs)
  np.testing.assert_allclose(batched, np.stack([saliency(x, g) for x, g in zip(xs, gs)]))
  np.testing.assert_allclose(batched, np.where((gs > 0) & (xs > 0), gs, 0))
  # Second derivative of sum(relu(x)^2) with TF's own Relu gradient: 2 where x > 0.
  square = cg.jax.get(tf1.port("tf1_test_relu", "Relu", "Relu", gradient="exact",
                               register=False))
  hessian_diag = jax.grad(lambda v: jax.grad(lambda u: (square(u) ** 2).sum())(v).sum())(xs[0])
  np.testing.assert_allclose(hessian_diag, np.where(xs[0] > 0, 2.0, 0.0))


# Defun(python_grad_func=...).


@pytest.mark.parametrize("mode", MODES)
def test_defun_drop_in(mode):
  x, s, g = _arrays(11, (4, 3), (4, 3), (4, 3))
  oracle = legacy_programs.graph_vjp(DEFUN.binarize_ste, [x], g)
  np.testing.assert_allclose(oracle[1][0], g * (np.abs(x) <= 1))
  # The migration: `function.Defun` becomes `crossgrad.tf1.Defun`, nothing else changes.
  binarize = tf1.Defun(tf.float32, python_grad_func=DEFUN.binarize_ste._python_grad_func)(
      DEFUN.binarize_ste._func)
  assert_same(tf2_vjp(binarize, [x], g, mode), oracle)
  assert_same(legacy_programs.graph_vjp(binarize, [x], g), oracle)  # And in a tf.compat.v1 graph.
  square = tf1.Defun(tf.float32, tf.float32,
                     python_grad_func=DEFUN.scaled_square._python_grad_func)(
                         DEFUN.scaled_square._func)
  oracle = legacy_programs.graph_vjp(lambda a, b: DEFUN.scaled_square(a, b), [x, s], g)
  assert_same(tf2_vjp(square, [x, s], g, mode), oracle)


def test_defun_ports_are_native():
  op = tf1.port("tf1_test_scaled_square", DEFUN.scaled_square, gradient="exact",
                sample=lambda rng: (rng.standard_normal((3, 2)), rng.standard_normal((3, 2))),
                register=False)
  # The sample's rows: the legacy gradient is written for inputs of one shape (it sums
  # nothing back where one broadcasts), which the variant rows would flag.
  report = cg.cross_check([op], dtypes=("float32", "float64"), variants="none")
  assert report.ok and not [r for r in report.rows if r.check == "skipped"
                            and r.backend not in ("torch", "numpy")
                            and not r.note.startswith("jvp:")
                            ], report.table()
  x, s = _arrays(12, (3, 2), (3, 2))
  _no_host_code(op, x, s)
  fn = cg.jax.get(op)
  hessian_diag = jax.grad(lambda a: jax.grad(lambda u: fn(u, s).sum())(a).sum())(x)
  np.testing.assert_allclose(hessian_diag, 2 * s, rtol=1e-6)
  binarize = tf1.port("tf1_test_binarize_ste", DEFUN.binarize_ste, register=False)
  assert binarize.input_names == ("x",)
  got = jax.vmap(jax.grad(lambda v: cg.jax.get(binarize)(v).sum()))(x)
  np.testing.assert_array_equal(got, (np.abs(x) <= 1).astype(np.float32))


def test_translated_gradients_unbroadcast_and_name_what_cannot_translate():
  op = tf1.port("tf1_test_mul_as_add", "Mul", "Add", register=False,
                sample=lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal((1, 4))))
  report = cg.cross_check([op], dtypes=("float32",))
  assert report.ok, report.table(failures_only=True)
  x, y, g = _arrays(13, (3, 4), (1, 4), (3, 4))
  _, grads = base.load("jax").evaluate(op, {}, [x, y], [g], mode="jit")
  np.testing.assert_allclose(grads[0], g)  # TF's Add gradient, summed over the broadcast.
  np.testing.assert_allclose(grads[1], g.sum(axis=0, keepdims=True), rtol=1e-6)

  def noisy(op, grad):
    return grad * tf.random.uniform(tf.shape(grad))

  auto = tf1.port("tf1_test_noisy", "Identity", noisy, register=False)
  assert auto.forward.port.jax_strategy([x, x, g])[0] == "call_tf"
  native = cg.jax.get(tf1.port("tf1_test_noisy_native", "Identity", noisy,
                               jax_backward="native", register=False))
  with pytest.raises(cg.CrossgradError,
                     match=r"tf1_test_noisy_native.*RandomUniform.*random or stateful"):
    jax.grad(lambda v: native(v).sum())(x)
