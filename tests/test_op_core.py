"""One op core: each misuse gives the same `CrossgradError` in every backend.

The checks of a call (input count, input dtypes, the op's ``check_inputs`` and
``check_values``), of the forward (its result's form, its outputs' dtypes) and of the
backward (cotangent count, None-ness, shape, dtype) live once in
`crossgrad.backends.common.op_core`; each framework only wraps them in its custom-gradient
primitive. Each case below runs in every backend, which must raise the message the NumPy
reference raises, with its own name in place of ``numpy``; correct definitions run in every
backend without an error.
"""

import dataclasses
import re

import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.common import base, op_core
from crossgrad.registry import validation

BACKENDS = [b for b in base.BUILT_IN if b in ["numpy"] + base.default_backends()]
X = np.array([0.5, -1.5, 2.0], np.float64)
# Where a message names what the op returned, it names the framework's own array type
# (a tracer where the checks run at trace time).
ARRAY_TYPES = re.compile(r"\b(ndarray|EagerTensor|ArrayImpl|Tensor|\w*Tracer)\b")
LABELS = np.array([0, 1, 1], np.int32)


def _op(name, forward=None, backward=None, **kwargs):
  """A scaling op ``(x, labels) -> 2x`` with one part replaced by a faulty one."""
  return cg.OpDef(
      f"t_core_{name}",
      forward or (lambda xp, x, labels: (2.0 * x, ())),
      backward or (lambda xp, r, g: (2.0 * g, None)),
      nondiff=("labels",), gradient="declared", **kwargs)


def _gradient(backend, op, inputs):
  """Runs the op and its backward in ``backend`` (cotangent ones): its input cotangents."""
  if backend == "numpy":
    outputs, vjp_fn = cg.numpy.vjp(op, *inputs)
    return vjp_fn(np.ones_like(outputs))[0]
  fn = getattr(cg, backend).get(op)
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    x = tf.constant(inputs[0])
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = fn(x, *inputs[1:])
    return tape.gradient(y, x)
  if backend == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    with jax.enable_x64(True):  # float64 stays float64.
      y, vjp_fn = jax.vjp(lambda x: fn(x, *inputs[1:]), inputs[0])
      return vjp_fn(np.ones_like(y))[0]
  import torch  # pylint: disable=g-import-not-at-top
  x = torch.tensor(inputs[0], requires_grad=inputs[0].dtype.kind == "f")
  fn(x, *(torch.as_tensor(a) for a in inputs[1:])).sum().backward()
  return x.grad


def _checked_inputs(specs):
  if specs["x"].shape[0] > 2:
    raise cg.CrossgradError("at most two rows", argument="input 'x'", expected="2 rows",
                            actual=str(specs["x"]))


def _checked_values(xp, x, labels):
  del xp, x
  values = validation.concrete_values(labels)
  if values is not None and values.max() >= 3:
    raise cg.CrossgradError("label out of range", argument="input 'labels'",
                            expected="labels below 3", actual=f"{values.max()}")


# (case, op, inputs): each op is faulty in one place; the inputs reach it.
CASES = [
    ("input count", _op("count"), (X,)),
    ("integer differentiable input", _op("int_input"), (LABELS, LABELS)),
    ("the op's check_inputs", _op("check", check_inputs=_checked_inputs), (X, LABELS)),
    ("the op's check_values", _op("values", check_values=_checked_values),
     (X, np.array([0, 1, 5], np.int32))),
    ("forward result not a pair", _op("pair", forward=lambda xp, x, labels: 2.0 * x),
     (X, LABELS)),
    ("forward changes the dtype", _op(
        "dtype", forward=lambda xp, x, labels: (xp.astype(x, xp.float32), ())), (X, LABELS)),
    ("one cotangent too many", _op(
        "extra", backward=lambda xp, r, g: (g, None, g)), (X, LABELS)),
    ("cotangent for the non-differentiable input", _op(
        "nondiff", backward=lambda xp, r, g: (g, g)), (X, LABELS)),
    ("missing cotangent", _op("missing", backward=lambda xp, r, g: (None, None)),
     (X, LABELS)),
    ("cotangent of another shape", _op(
        "shape", backward=lambda xp, r, g: (xp.sum(g, keepdims=True), None)), (X, LABELS)),
    ("cotangent of another dtype", _op(
        "ct_dtype", backward=lambda xp, r, g: (xp.astype(g, xp.float32), None)),
     (X, LABELS)),
]


def _error(backend, op, inputs):
  with pytest.raises(cg.CrossgradError) as info:
    _gradient(backend, op, inputs)
  return info.value


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case, op, inputs", CASES, ids=[c[0] for c in CASES])
def test_a_misuse_gives_the_reference_error_in_every_backend(backend, case, op, inputs):
  del case
  reference = _error("numpy", op, inputs)
  error = _error(backend, op, inputs)
  assert (error.op, error.backend) == (op.name, backend)
  assert (error.problem, error.argument, error.expected) == (
      reference.problem, reference.argument, reference.expected)
  text = ARRAY_TYPES.sub("<array>", str(error))
  assert text == ARRAY_TYPES.sub("<array>", str(reference)).replace("(numpy)", f"({backend})")


def test_the_cases_say_what_the_checks_say():
  """The reference's messages, written out: the comparison above is not of two blanks."""
  messages = [str(_error("numpy", op, inputs)) for _, op, inputs in CASES]
  assert messages[0] == ("[crossgrad] op 't_core_count' (numpy), inputs: wrong number of "
                         "inputs: expected 2 (x, labels), got 1")
  assert messages[1].startswith("[crossgrad] op 't_core_int_input' (numpy), input 'x': a "
                                "differentiable input must be floating")
  assert messages[2] == ("[crossgrad] op 't_core_check' (numpy), input 'x': at most two rows: "
                         "expected 2 rows, got float64[3]")
  assert messages[3] == ("[crossgrad] op 't_core_values' (numpy), input 'labels': label out "
                         "of range: expected labels below 3, got 5")
  assert "forward must return (outputs, residuals): expected a 2-tuple" in messages[4]
  assert "forward output 0: the forward's output has another dtype" in messages[5]
  assert "backward returned the wrong number of cotangents: expected 2" in messages[6]
  assert "cotangent for input 'labels': non-differentiable input gets no cotangent" \
      in messages[7]
  assert "cotangent for input 'x': missing cotangent" in messages[8]
  assert "cotangent shape differs from the input's: expected float64[3], got float64[1]" \
      in messages[9]
  assert "cotangent dtype differs from the input's: expected float64[3], got float32[3]" \
      in messages[10]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_correct_op_passes_every_check(backend):
  """The same checks let a correct op through: its gradient is the doubled cotangent."""
  grad = _gradient(backend, _op("correct"), (X, LABELS))
  np.testing.assert_array_equal(np.asarray(grad), np.full(3, 2.0))


def test_every_built_in_backend_emits_through_the_core():
  """Each built-in op is an `op_core.OpCore` call (prepare, then the framework's primitive)."""
  for backend in BACKENDS:
    emitted = getattr(cg, backend).get(_op("correct"))
    assert isinstance(emitted.core, op_core.OpCore), backend
    assert emitted.core.name == backend


def test_interned_makes_each_value_once_and_starts_afresh_at_its_limit():
  """`base.interned` (the specs and checks each eager call looks up): a hit returns the
  stored object without calling ``make``; a miss at the limit clears the cache first; a
  ``make`` that raises (a failed check) leaves the cache as it was."""
  made = []

  def make(key):
    made.append(key)
    if key == "bad":
      raise ValueError(key)
    return [key]

  cache = {}
  first = base.interned(cache, "a", make, limit=2)
  assert base.interned(cache, "a", make, limit=2) is first and made == ["a"]
  base.interned(cache, "b", make, limit=2)
  with pytest.raises(ValueError):
    base.interned(cache, "bad", make, limit=2)
  assert list(cache) == ["a", "b"]
  assert base.interned(cache, "c", make, limit=2) == ["c"]
  assert list(cache) == ["c"] and made == ["a", "b", "bad", "c"]


class _RecordingBody:
  """A `op_core.Body` that runs as called and records the signatures it is handed."""

  def __init__(self):
    self.seen = []

  def forward(self, fn, xp, inputs, params, signature):
    self.seen.append(("forward", signature))
    return fn(xp, *inputs, **params)

  def backward(self, fn, xp, args, params, signature):
    self.seen.append(("backward", signature))
    return fn(xp, *args, **params)


@pytest.mark.parametrize("tracing", [False, True])
def test_bodies_get_the_signature_of_the_forwards_inputs(tracing):
  """One `Signature` per input keys, checked by `prepare`, handed to the forward and to the
  backward after it; None while a tracer traces."""
  from crossgrad.backends.numpy import emitter as reference  # pylint: disable=g-import-not-at-top
  body = _RecordingBody()
  adapter = dataclasses.replace(reference._CORE, make_body=lambda: body,  # pylint: disable=protected-access
                                tracing=lambda: tracing)
  core = op_core.OpCore(adapter, _op("signature"), {})

  def step(x):
    inputs = core.prepare([x, LABELS])
    result = core.forward(inputs)
    core.backward(result.residuals, [np.ones_like(x)], result.specs, np.zeros, on=inputs)
    return result.specs

  specs = [step(X), step(X + 1.0), step(X[:2].copy())]
  forwards = [s for kind, s in body.seen if kind == "forward"]
  backwards = [s for kind, s in body.seen if kind == "backward"]
  if tracing:
    assert forwards == backwards == [None] * 3
    return
  assert forwards == backwards and [s.signature for s in specs] == forwards
  same, other = forwards[0], forwards[2]
  assert forwards[1] is same and other is not same
  assert same.checked and other.checked
  assert same.keys == (adapter.spec_of(X), adapter.spec_of(LABELS))
