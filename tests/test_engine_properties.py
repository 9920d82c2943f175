"""Property-based tests of the cross-check engine: random ops with planted wrong backwards
are always caught, correct ones never flagged.

Random ops come from eleven families (elementwise, product, broadcast, reduction, matmul,
piecewise, and, reaching what frameworks do differently at special values, sorting,
inverse, logarithm, maxima, integer labels), each with its correct backward and the bugs that fit it: scaled, sign-flipped,
swapped inputs, wrong reduction axis, broadcasting slips (mean for sum, a broadcast input
treated as a scalar), wrong on one region only. A bug in every backend must fail a finite-
difference row (NumPy only); a bug in one backend must fail that backend's comparison rows
(a second NumPy backend, "twin", stands in for a framework). The special-value families also
run in every framework, eager and compiled, with no false alarm; edge shapes (0-d,
zero-size, broadcast, boolean and integer inputs, integer outputs) check cleanly and their
bugs are caught. `test_rates` measures the
detection and false-alarm rates over 12 seeds per family; ``CROSSGRAD_PROPERTY_EXAMPLES=N``
makes that N seeds and N hypothesis examples per property (prints the rates with ``-s``).
"""

from __future__ import annotations

import collections
import dataclasses
import math
import os
from typing import Any, Callable

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest

import crossgrad as cg
from crossgrad.backends.common import base
from crossgrad.registry import validation
import toy_backends

TWIN = "twin"
EXAMPLES = int(os.environ.get("CROSSGRAD_PROPERTY_EXAMPLES", "0"))  # 0: the quick default.
FAST = settings(max_examples=max(25, EXAMPLES), deadline=None, derandomize=True)


@pytest.fixture(scope="module", autouse=True)
def twin():
  base.register(toy_backends.NumpyTwin(TWIN))
  yield
  base.unregister(TWIN)


@dataclasses.dataclass
class Family:
  """One random op: forward, its correct backward, sample, and its applicable bugs."""

  forward: Callable[..., Any]
  backward: Callable[..., Any]
  sample: Callable[[np.random.Generator], tuple]
  bugs: dict[str, Callable[..., Any]]
  special_differences: dict[str, str] = dataclasses.field(default_factory=dict)
  nondiff: tuple[str, ...] = ()
  check_inputs: Callable[..., None] | None = None  # The op's contract (OpDef's).


# Sums over the dtype's extremes (special values) overflow in framework-specific order.
OVERFLOW = {"overflow_order": "its backward sums products of special values"}


def _positive_first(x):
  """``x`` with its first element made positive: the region x > 0 is never empty."""
  x = np.array(x)
  x.flat[0] = abs(x.flat[0]) + 0.1
  return x


def _scaled(backward, factor):
  return lambda xp, r, g: tuple(None if c is None else c * factor if i == 0 else c
                                for i, c in enumerate(backward(xp, r, g)))


def _flipped(backward):
  return lambda xp, r, g: tuple(None if c is None else -c if i == 0 else c
                                for i, c in enumerate(backward(xp, r, g)))


def _one_region(backward, factor):
  """Wrong only where the first input is positive."""
  def wrong(xp, r, g):
    cts = backward(xp, r, g)
    return (xp.where(r[0] > 0, cts[0] * factor, cts[0]),) + tuple(cts[1:])
  return wrong


def _common_bugs(backward, rng):
  factor = float(rng.choice([-1.0, 1.0]) * rng.uniform(0.0, 0.9) + 1.0)
  factor = factor if abs(factor - 1.0) > 0.02 else 1.5
  return {"scaled": _scaled(backward, factor), "sign_flipped": _flipped(backward),
          "one_region": _one_region(backward, factor)}


def elementwise(rng) -> Family:
  """a * h(x) + b * x for h in square, tanh, cube."""
  a, b = (float(v) for v in rng.uniform(0.5, 2.0, 2) * rng.choice([-1, 1], 2))
  h = int(rng.integers(3))
  shape = tuple(int(s) for s in rng.integers(2, 6, 2))

  def forward(xp, x):
    y = [xp.square(x), xp.tanh(x), x * xp.square(x)][h]
    return a * y + b * x, (x,)

  def backward(xp, r, g):
    (x,) = r
    dh = [2.0 * x, 1.0 - xp.square(xp.tanh(x)), 3.0 * xp.square(x)][h]
    return (g * (a * dh + b),)

  return Family(forward, backward, lambda r: (_positive_first(r.standard_normal(shape)),),
                _common_bugs(backward, rng))


def product(rng) -> Family:
  """x * y + c * x: the partials differ, so swapping them is wrong."""
  c = float(rng.uniform(0.5, 2.0))
  shape = tuple(int(s) for s in rng.integers(2, 6, 2))

  def forward(xp, x, y):
    return x * y + c * x, (x, y)

  def backward(xp, r, g):  # Either input may broadcast (the check's variants try both).
    x, y = r
    return xp.unbroadcast(g * (y + c), x), xp.unbroadcast(g * x, y)

  def swapped(xp, r, g):
    dx, dy = backward(xp, r, g)
    return dy, dx

  bugs = _common_bugs(backward, rng)
  bugs["swapped_inputs"] = swapped
  return Family(forward, backward,
                lambda r: (_positive_first(r.standard_normal(shape)), r.standard_normal(shape)),
                bugs)


def broadcast(rng) -> Family:
  """x * w with w broadcast along one axis of x."""
  m, n = (int(s) for s in rng.integers(2, 6, 2))
  w_shape = [(1, n), (n,), (m, 1)][int(rng.integers(3))]

  def forward(xp, x, w):
    return x * w + x, (x, w)

  def backward(xp, r, g):  # Either input may broadcast (the check's variants try both).
    x, w = r
    return xp.unbroadcast(g * (w + 1.0), x), xp.unbroadcast(g * x, w)

  def mean_for_sum(xp, r, g):
    x, w = r
    dw = xp.unbroadcast(g * x, w)
    return g * (w + 1.0), dw * (1.0 / (m if len(w_shape) == 1 or w_shape[0] == 1 else n))

  def as_scalar(xp, r, g):
    x, w = r
    return g * (xp.sum(w) + 1.0), xp.unbroadcast(g * x, w)

  bugs = _common_bugs(backward, rng)
  bugs.update(broadcast_mean_for_sum=mean_for_sum, broadcast_as_scalar=as_scalar)
  return Family(forward, backward, lambda r: (_positive_first(r.standard_normal((m, n))),
                                               r.standard_normal(w_shape)), bugs, OVERFLOW)


def reduction(rng) -> Family:
  """sum(v * x^2, axis=k) of a square x: the wrong axis keeps every shape."""
  n, axis = int(rng.integers(2, 6)), int(rng.integers(2))
  weights = rng.uniform(0.5, 2.0, (n, n))

  def forward(xp, x):
    v = xp.astype(weights, x.dtype)
    return xp.sum(v * xp.square(x), axis=axis), (x, v)

  def backward(xp, r, g):  # x (1, n) broadcasts against the weights: summed back.
    x, v = r
    return (xp.unbroadcast(2.0 * v * x * xp.expand_dims(g, axis), x),)

  def wrong_axis(xp, r, g):
    x, v = r
    return (2.0 * v * x * xp.expand_dims(g, 1 - axis),)

  bugs = _common_bugs(backward, rng)
  bugs["wrong_axis"] = wrong_axis
  return Family(forward, backward, lambda r: (_positive_first(r.standard_normal((n, n))),),
                bugs)


def matmul(rng) -> Family:
  """x @ w of square matrices: a missing transpose and swapped partials keep every shape."""
  n = int(rng.integers(2, 6))

  def forward(xp, x, w):
    return xp.matmul(x, w), (x, w)

  # Products with a transposed factor as broadcast sums: names valid in the Array API too.
  def backward(xp, r, g):
    x, w = r
    dx = xp.sum(xp.expand_dims(g, 1) * xp.expand_dims(w, 0), axis=2)  # g @ w^T
    dw = xp.sum(xp.expand_dims(x, 2) * xp.expand_dims(g, 1), axis=0)  # x^T @ g
    return dx, dw

  def no_transpose(xp, r, g):
    return xp.matmul(g, r[1]), backward(xp, r, g)[1]

  def swapped(xp, r, g):
    dx, dw = backward(xp, r, g)
    return dw, dx

  def square_matrices(specs):  # The backward is written for matrices, not batches.
    for name, spec in specs.items():
      if spec.shape is not None and len(spec.shape) != 2:
        raise cg.CrossgradError("input must be a matrix", argument=f"input '{name}'",
                                expected="rank 2", actual=str(spec))

  bugs = _common_bugs(backward, rng)
  bugs.update(missing_transpose=no_transpose, swapped_inputs=swapped)
  return Family(forward, backward, lambda r: (_positive_first(r.standard_normal((n, n))),
                                               r.standard_normal((n, n))), bugs, OVERFLOW,
                check_inputs=square_matrices)


def piecewise(rng) -> Family:
  """where(x > 0, a x, b x), sampled off the kink; the bug is wrong on one side only."""
  a, b = (float(v) for v in rng.uniform(0.1, 2.0, 2))
  b = b if abs(a - b) > 0.05 else a + 0.5
  shape = tuple(int(s) for s in rng.integers(2, 6, 2))

  def forward(xp, x):
    return xp.where(x > 0, a * x, b * x), (x,)

  def backward(xp, r, g):
    (x,) = r
    return (xp.where(x > 0, a * g, b * g),)

  def one_side(xp, r, g):
    return (a * g,)  # Right where x > 0 only.

  def sample(r):
    z = r.standard_normal(shape)
    z = z + 0.1 * np.sign(z)
    z.flat[0], z.flat[1] = abs(z.flat[0]), -abs(z.flat[1])  # Both sides are sampled.
    return (z,)

  bugs = _common_bugs(backward, rng)
  bugs["wrong_on_one_side"] = one_side
  return Family(forward, backward, sample, bugs)


def sorting(rng) -> Family:
  """sort(a * x) along the last axis: the backward scatters g back through the inverse
  permutation; dropping it keeps every shape."""
  a = float(rng.uniform(0.5, 2.0))
  shape = (int(rng.integers(2, 5)), int(rng.integers(3, 7)))

  def forward(xp, x):
    order = xp.argsort(x, axis=-1, stable=True)
    return a * xp.take_along_axis(x, order, axis=-1), (xp.argsort(order, axis=-1, stable=True),)

  def backward(xp, r, g):
    return (a * xp.take_along_axis(g, r[0], axis=-1),)

  def unpermuted(xp, r, g):
    return (a * g,)

  def sample(r):  # Distinct values, so the order is not a tie.
    return (_positive_first(r.permutation(shape[0] * shape[1]).reshape(shape) * 0.37
                            + r.uniform(-0.1, 0.1, shape)),)

  bugs = _common_bugs(backward, rng)
  bugs["unpermuted"] = unpermuted
  return Family(forward, backward, sample, bugs)


def inverse(rng) -> Family:
  """inv(x) of a well-conditioned matrix: d inv = -inv^T g inv^T."""
  n = int(rng.integers(2, 5))

  def forward(xp, x):
    y = xp.linalg.inv(x)
    return y, (y,)

  def backward(xp, r, g):
    yt = xp.linalg.matrix_transpose(r[0])
    return (-xp.matmul(xp.matmul(yt, g), yt),)

  def untransposed(xp, r, g):
    return (-xp.matmul(xp.matmul(r[0], g), r[0]),)

  def sample(r):
    return (_positive_first(np.eye(n) * n + 0.3 * r.standard_normal((n, n))),)

  bugs = _common_bugs(backward, rng)
  bugs["missing_transpose"] = untransposed
  return Family(forward, backward, sample, bugs)


def logarithm(rng) -> Family:
  """a * log(x) + b * x at positive samples: log(0) = -inf, log(-1) = NaN at special ones."""
  a, b = (float(v) for v in rng.uniform(0.5, 2.0, 2))
  shape = tuple(int(s) for s in rng.integers(2, 6, 2))

  def forward(xp, x):
    return a * xp.log(x) + b * x, (x,)

  def backward(xp, r, g):
    return (g * (a / r[0] + b),)

  def times_x(xp, r, g):
    return (g * (a * r[0] + b),)

  bugs = _common_bugs(backward, rng)
  bugs["derivative_of_exp"] = times_x
  return Family(forward, backward, lambda r: (r.uniform(0.2, 3.0, shape),), bugs)


def maxima(rng) -> Family:
  """max over axis 1 of maximum(x, y): ties (equal special values) take the first branch in
  every backend, since the backward is the op's own."""
  m, n = (int(s) for s in rng.integers(2, 6, 2))

  def forward(xp, x, y):
    both = xp.maximum(x, y)
    top = xp.max(both, axis=1, keepdims=True)
    return top[:, 0], (x, y, both, top)

  def backward(xp, r, g):  # Either input may broadcast (the check's variants try both).
    x, y, both, top = r
    spread = xp.where(both == top, xp.expand_dims(g, 1), xp.zeros_like(both))
    return (xp.unbroadcast(xp.where(x >= y, spread, xp.zeros_like(spread)), x),
            xp.unbroadcast(xp.where(x >= y, xp.zeros_like(spread), spread), y))

  def swapped(xp, r, g):
    dx, dy = backward(xp, r, g)
    return dy, dx

  def sample(r):  # Distinct values, apart: no ties, no kinks; x wins the first row, so
    # a bug in dx shows.
    values = r.permutation(2 * m * n).reshape(2, m, n) * 0.29 + r.uniform(-0.1, 0.1, (2, m, n))
    values[0, 0, 0] = values.max() + 0.3
    return values[0], values[1]

  bugs = _common_bugs(backward, rng)
  bugs["swapped_inputs"] = swapped
  return Family(forward, backward, sample, bugs,  # Ties of a broadcast input: its contract.
                check_inputs=lambda specs: validation.require_same_spec(specs, "x", "y"))


def labels(rng) -> Family:
  """Softmax cross-entropy with integer labels (nondiff), and the predicted class as an
  integer output: log-sum-exp minus the logit of the label."""
  m, n = (int(s) for s in rng.integers(2, 6, 2))

  def forward(xp, z, label):
    top = xp.max(z, axis=1, keepdims=True)
    e = xp.exp(z - top)
    total = xp.sum(e, axis=1, keepdims=True)
    picked = xp.take_along_axis(z, xp.expand_dims(label, 1), axis=1)
    loss = (top + xp.log(total) - picked)[:, 0]
    return (loss, xp.argmax(z, axis=1)), (e / total, label)

  def backward(xp, r, g):
    p, label = r
    onehot = xp.astype(xp.expand_dims(label, 1) == xp.arange(p.shape[1], dtype=label.dtype),
                       p.dtype)
    return (xp.expand_dims(g[0], 1) * (p - onehot), None)

  def without_onehot(xp, r, g):
    return (xp.expand_dims(g[0], 1) * r[0], None)

  def scaled(xp, r, g):
    return (1.5 * backward(xp, r, g)[0], None)

  def sample(r):
    return (_positive_first(r.standard_normal((m, n))), r.integers(0, n, m))

  return Family(forward, backward, sample,
                {"scaled": scaled, "sign_flipped": _flipped(backward),
                 "missing_onehot": without_onehot}, nondiff=("label",))


FAMILIES = {f.__name__: f for f in (elementwise, product, broadcast, reduction, matmul,
                                    piecewise, sorting, inverse, logarithm, maxima, labels)}
# Families whose special values reach what frameworks do differently on invalid input: NaN
# order in sorts, inverses of non-finite matrices, log of negatives, NaN in maxima and
# arg-maxima.
SPECIAL_FAMILIES = ("sorting", "inverse", "logarithm", "maxima", "labels")


def _op(family: Family, backward, name: str = "t_random") -> cg.OpDef:
  return cg.OpDef(name, family.forward, backward, sample=family.sample,
                  special_differences=family.special_differences, nondiff=family.nondiff,
                  check_inputs=family.check_inputs)


def _in_twin_only(backward, correct):
  """The bug in the twin backend only; every other backend runs the correct backward."""
  return lambda xp, r, g: (backward if xp.backend == TWIN else correct)(xp, r, g)


def _caught_everywhere(family: Family, bug: str, seed: int) -> bool:
  report = cg.cross_check([_op(family, family.bugs[bug])], backends=[], seed=seed)
  return any(r.check == "fd" and not r.ok for r in report.rows)


def _caught_in_twin(family: Family, bug: str, seed: int) -> bool:
  op = _op(family, _in_twin_only(family.bugs[bug], family.backward))
  report = cg.cross_check([op], backends=[TWIN], dtypes=["float64"], seed=seed)
  return (all(r.ok for r in report.rows if r.check == "fd")
          and any(r.check == "vjp" and not r.ok for r in report.failures))


def _flagged(family: Family, seed: int, backends=(TWIN,), **kwargs) -> list:
  report = cg.cross_check([_op(family, family.backward)], backends=backends, seed=seed,
                          **kwargs)
  return report.failures


@st.composite
def cases(draw):
  name = draw(st.sampled_from(sorted(FAMILIES)))
  seed = draw(st.integers(0, 2 ** 31 - 1))
  family = FAMILIES[name](np.random.default_rng(seed))
  bug = draw(st.sampled_from(sorted(family.bugs)))
  return name, seed, family, bug


@FAST
@given(cases())
def test_a_bug_in_every_backend_fails_finite_differences(case):
  name, seed, family, bug = case
  assert _caught_everywhere(family, bug, seed), (name, seed, bug)


@FAST
@given(cases())
def test_a_bug_in_one_backend_fails_its_comparison_rows(case):
  name, seed, family, bug = case
  assert _caught_in_twin(family, bug, seed), (name, seed, bug)


@FAST
@given(st.sampled_from(sorted(FAMILIES)), st.integers(0, 2 ** 31 - 1))
def test_correct_ops_are_never_flagged(name, seed):
  family = FAMILIES[name](np.random.default_rng(seed))
  assert not _flagged(family, seed), (name, seed)


@settings(max_examples=max(4, EXAMPLES // 20), deadline=None, derandomize=True)
@given(st.sampled_from(sorted(FAMILIES)), st.integers(0, 2 ** 31 - 1))
def test_correct_ops_pass_against_jax_too(name, seed):
  """Real framework: sampled and special values, float32 and float64, eager."""
  family = FAMILIES[name](np.random.default_rng(seed))
  failures = _flagged(family, seed, backends=("jax",), modes=["eager"])
  assert not failures, (name, seed, failures)


FRAMEWORKS = ("jax", "tensorflow", "torch")


@pytest.mark.parametrize("name", SPECIAL_FAMILIES)
def test_correct_ops_have_no_false_alarms_at_special_values(name):
  """Sorting, inverses, logs, maxima and integer labels in every framework, eager and
  compiled: special values reach NaN orders, raising inverses and arg-maxima of NaN, and
  none of it fails a correct op (divergences there are advisory)."""
  for seed in range(max(1, EXAMPLES // 10)):
    family = FAMILIES[name](np.random.default_rng([seed, 29]))
    report = cg.cross_check([_op(family, family.backward)], backends=FRAMEWORKS, seed=seed,
                            modes=["eager", "jit", "compile"])
    assert not report.failures, (name, seed, report.failures)
    special = {r.backend for r in report.rows if r.check == "special"}
    assert special == set(FRAMEWORKS), special  # The special rows ran everywhere.


def test_special_values_reach_real_framework_differences():
  """Not vacuous: TensorFlow's eager inverse raises on the special inputs, which is advisory
  by default and fails under --special=strict."""
  family = inverse(np.random.default_rng(0))
  op = _op(family, family.backward)
  report = cg.cross_check([op], backends=["tensorflow"], dtypes=["float64"], modes=["eager"])
  assert report.ok and [r.advisory for r in report.advisories] == ["raises"]
  strict = cg.cross_check([op], backends=["tensorflow"], dtypes=["float64"], modes=["eager"],
                          special="strict")
  assert [(r.check, r.note.split(":")[0]) for r in strict.failures] == [
      ("special", "InvalidArgumentError")]


# Edge shapes: x of any of these shapes, w broadcastable to it, a boolean and a 0-d integer
# input (nondiff), and an integer output next to the floating one.
EDGE_SHAPES = {(): [()], (0,): [(), (0,), (1,)], (0, 3): [(3,), (1, 3), (0, 1)],
               (3,): [(), (1,), (3,)], (2, 3): [(3,), (1, 3), (2, 1), ()]}


def _edge_op(x_shape, w_shape, bug: str | None = None, name: str = "t_edge") -> cg.OpDef:
  def forward(xp, x, w, mask, k):
    s = xp.where(mask, xp.ones_like(x), 2.0 * xp.ones_like(x)) * xp.astype(k, x.dtype)
    return (x * w * s, xp.astype(x > 0, xp.int32)), (x, w, s)

  def backward(xp, r, g):
    x, w, s = r
    dx, dw = xp.unbroadcast(g[0] * w * s, x), xp.unbroadcast(g[0] * x * s, w)
    if bug == "scaled" and xp.backend == TWIN:
      dx = 1.5 * dx
    if bug == "unbroadcast_as_mean" and xp.backend == TWIN:
      dw = dw / float(max(1, math.prod(x_shape) // max(1, math.prod(w_shape))))
    return dx, dw, None, None

  def sample(rng):
    return (rng.standard_normal(x_shape), rng.uniform(1.0, 2.0, w_shape),
            rng.standard_normal(x_shape) > 0, np.asarray(int(rng.integers(1, 4))))

  return cg.OpDef(name, forward, backward, nondiff=("mask", "k"), sample=sample)


@st.composite
def edge_shapes(draw):
  x_shape = draw(st.sampled_from(sorted(EDGE_SHAPES)))
  return x_shape, draw(st.sampled_from(EDGE_SHAPES[x_shape]))


@FAST
@given(edge_shapes(), st.integers(0, 2 ** 31 - 1))
def test_edge_shapes_check_cleanly_and_bugs_in_them_are_caught(shapes, seed):
  x_shape, w_shape = shapes
  report = cg.cross_check([_edge_op(x_shape, w_shape)], backends=[TWIN], seed=seed)
  assert report.ok and not report.failures, (shapes, report.failures)
  if math.prod(x_shape):  # A zero-size input has no value a bug could change.
    wrong = cg.cross_check([_edge_op(x_shape, w_shape, "scaled")], backends=[TWIN],
                           dtypes=["float64"], seed=seed)
    assert {r.check for r in wrong.failures} >= {"vjp"}, shapes
  if math.prod(x_shape) > math.prod(w_shape):
    wrong = cg.cross_check([_edge_op(x_shape, w_shape, "unbroadcast_as_mean")],
                           backends=[TWIN], dtypes=["float64"], seed=seed)
    assert {r.check for r in wrong.failures} >= {"vjp"}, shapes


@pytest.mark.parametrize("x_shape,w_shape", [((0, 3), (3,)), ((), ()), ((2, 3), (2, 1))])
def test_edge_shapes_check_cleanly_in_every_framework_and_mode(x_shape, w_shape):
  report = cg.cross_check([_edge_op(x_shape, w_shape)], backends=FRAMEWORKS)
  assert report.ok and not report.failures, report.failures
  modes = {(r.backend, r.mode) for r in report.rows if r.check == "vjp"}
  assert {b for b, _ in modes} == set(FRAMEWORKS) and len(modes) >= 10, modes


def test_rates():
  """Detection and false-alarm rates over CROSSGRAD_PROPERTY_EXAMPLES seeds per family."""
  examples = EXAMPLES or 12
  planted, caught = collections.Counter(), collections.Counter()
  correct = flagged = 0
  missed = []
  for name, make in sorted(FAMILIES.items()):
    for seed in range(examples):
      family = make(np.random.default_rng([seed, 17]))
      for bug in sorted(family.bugs):
        for where, check in (("all", _caught_everywhere), (TWIN, _caught_in_twin)):
          planted[bug] += 1
          if check(family, bug, seed):
            caught[bug] += 1
          else:
            missed.append((name, seed, bug, where))
      correct += 1
      flagged += bool(_flagged(family, seed))
  total, found = sum(planted.values()), sum(caught.values())
  print(f"\nplanted bugs caught: {found}/{total} ({100.0 * found / total:.2f}%); "
        f"correct ops flagged: {flagged}/{correct} ({100.0 * flagged / correct:.2f}%)\n"
        + ", ".join(f"{bug} {caught[bug]}/{n}" for bug, n in sorted(planted.items())))
  assert not missed, missed[:10]
  assert flagged == 0
