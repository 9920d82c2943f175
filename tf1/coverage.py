r"""What the JAX twin of a TF1 port translates: ``python -m crossgrad.tf1.coverage``.

Ports ordinary differentiable TF functions with a legacy gradient that lets TF build
their gradient (``tf.gradients(f(*op.inputs), op.inputs, grad_ys=grads)``, the TF1
idiom), so the twin replays TF's own gradient library. Each case is ``native``
(translated), ``fallback`` (jax2tf.call_tf or a host callback), ``refused`` (a
`CrossgradError`), ``wrong`` (a JAX gradient, eager or jit, differs from TF's) or
``crashed`` (any other exception: a crossgrad bug), with
the TF op types still missing; ``--handlers`` lists the translated op types, and
``--registered`` which op types with a gradient in TF's math, array and nn gradient
modules have a translation.
"""

from __future__ import annotations

import collections
import dataclasses
import warnings
from typing import Any, Callable, Sequence

from absl import flags
import numpy as np
import tensorflow as tf

from crossgrad.cli import usage
from crossgrad.registry.errors import CrossgradError

_HANDLERS = flags.DEFINE_bool("handlers", False, "List the translated TF op types instead.")
_VERBOSE = flags.DEFINE_bool("verbose", False, "Print every case with its reason.")
_REGISTERED = flags.DEFINE_bool(
    "registered", False, "List the op types whose gradient TF registers in its math, array "
    "and nn gradient modules, with and without a translation, instead.")
_GRADIENT_MODULES = ("math_grad", "array_grad", "nn_grad")


@dataclasses.dataclass(frozen=True)
class Case:
  """One ordinary TF function: ``fn(*inputs)`` on inputs of ``shapes`` drawn from ``domain``."""
  category: str
  name: str
  fn: Callable[..., Any]
  shapes: tuple[tuple[int, ...], ...] = ((3, 4),)
  domain: str = "real"  # real, positive (> 0.5), unit (|x| < 0.9), above_one (> 1.1)

  def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    draw = {"real": lambda s: rng.standard_normal(s),
            "positive": lambda s: rng.uniform(0.5, 2.0, s),
            "unit": lambda s: rng.uniform(-0.9, 0.9, s),
            "above_one": lambda s: rng.uniform(1.1, 3.0, s)}[self.domain]
    return tuple(draw(s) for s in self.shapes)


def _elementwise() -> list[Case]:
  nn, m = tf.nn, tf.math
  unary = {"abs": tf.abs, "neg": tf.negative, "exp": tf.exp, "expm1": m.expm1,
           "square": tf.square, "tanh": tf.tanh, "sigmoid": tf.sigmoid, "sin": tf.sin,
           "cos": tf.cos, "tan": lambda x: tf.tan(0.3 * x), "sinh": m.sinh, "cosh": m.cosh,
           "atan": m.atan, "asinh": m.asinh, "erf": m.erf, "erfc": m.erfc,
           "softplus": m.softplus, "softsign": nn.softsign, "relu": nn.relu,
           "relu6": nn.relu6, "elu": nn.elu, "selu": nn.selu, "leaky_relu": nn.leaky_relu,
           "gelu": nn.gelu, "swish": nn.silu, "sign_times_x": lambda x: tf.sign(x) * x,
           "floor_plus_x": lambda x: tf.floor(x) + x, "round_plus_x": lambda x: tf.round(x) + x,
           "clip_by_value": lambda x: tf.clip_by_value(x, -0.5, 0.5),
           "where_positive": lambda x: tf.where(x > 0, x * x, -x)}
  positive = {"log": m.log, "sqrt": tf.sqrt, "rsqrt": m.rsqrt, "reciprocal": m.reciprocal,
              "log1p": m.log1p, "lgamma": m.lgamma, "digamma": m.digamma,
              "pow_2_5": lambda x: tf.pow(x, 2.5)}
  unit = {"asin": m.asin, "acos": m.acos, "atanh": m.atanh}
  cases = [Case("unary", n, f) for n, f in unary.items()]
  cases += [Case("unary", n, f, domain="positive") for n, f in positive.items()]
  cases += [Case("unary", n, f, domain="unit") for n, f in unit.items()]
  cases.append(Case("unary", "acosh", m.acosh, domain="above_one"))
  two, bcast = ((3, 4), (3, 4)), ((3, 4), (1, 4))
  cases += [Case("binary", n, f, s) for n, f, s in (
      ("add", tf.add, bcast), ("sub", tf.subtract, bcast), ("mul", tf.multiply, bcast),
      ("div", tf.divide, two), ("maximum", tf.maximum, bcast), ("minimum", tf.minimum, two),
      ("squared_difference", m.squared_difference, bcast), ("atan2", m.atan2, two),
      ("div_no_nan", m.divide_no_nan, two), ("xlogy", m.xlogy, two),
      ("mul_no_nan", m.multiply_no_nan, two), ("add_n", lambda a, b: tf.add_n([a, b, a]), two),
      ("scalar_mul", lambda a, b: 2.0 * a + b[0, 0], two),
      ("where", lambda a, b: tf.where(a > b, a, b), two))]
  cases.append(Case("binary", "pow", tf.pow, two, domain="positive"))
  return cases


def _structural() -> list[Case]:
  nn = tf.nn
  cases = [Case("reduction", n, f, ((3, 4, 2),)) for n, f in (
      ("sum", tf.reduce_sum), ("sum_axis", lambda x: tf.reduce_sum(x, axis=1)),
      ("sum_keepdims", lambda x: tf.reduce_sum(x, axis=[0, 2], keepdims=True)),
      ("mean", tf.reduce_mean), ("mean_axis", lambda x: tf.reduce_mean(x, axis=-1)),
      ("max", lambda x: tf.reduce_max(x, axis=1)), ("min", tf.reduce_min),
      ("prod", lambda x: tf.reduce_prod(x, axis=0)),
      ("logsumexp", lambda x: tf.reduce_logsumexp(x, axis=1)),
      ("variance", lambda x: tf.math.reduce_variance(x, axis=0)),
      ("std", lambda x: tf.math.reduce_std(x, axis=2)), ("norm", tf.norm),
      ("euclidean_norm", lambda x: tf.math.reduce_euclidean_norm(x, axis=1)),
      ("l2_loss", nn.l2_loss), ("moments", lambda x: tf.add_n(nn.moments(x, axes=[0, 1]))))]
  cases += [Case("cumulative", n, f) for n, f in (
      ("cumsum", lambda x: tf.cumsum(x, axis=1)),
      ("cumsum_reverse_exclusive", lambda x: tf.cumsum(x, axis=0, exclusive=True,
                                                       reverse=True)),
      ("cumprod", lambda x: tf.math.cumprod(x, axis=1)),
      ("cumulative_logsumexp", lambda x: tf.math.cumulative_logsumexp(x, axis=1)))]
  cases += [Case("shape_linalg", n, f, s) for n, f, s in (
      ("matmul", tf.matmul, ((3, 4), (4, 2))),
      ("matmul_transposed", lambda a, b: tf.matmul(a, b, transpose_b=True), ((3, 4), (2, 4))),
      ("batch_matmul", tf.matmul, ((2, 3, 4), (2, 4, 5))),
      ("einsum", lambda a, b: tf.einsum("ij,kj->ik", a, b), ((3, 4), (2, 4))),
      ("tensordot", lambda a, b: tf.tensordot(a, b, 1), ((3, 4), (4, 2))),
      ("reshape", lambda x: tf.reshape(x, (4, 3)), ((3, 4),)),
      ("transpose", tf.transpose, ((3, 4),)), ("expand_dims", lambda x: x[:, None], ((3, 4),)),
      ("squeeze", lambda x: tf.squeeze(x, axis=1), ((3, 1, 4),)),
      ("tile", lambda x: tf.tile(x, [2, 3]), ((3, 4),)),
      ("broadcast_to", lambda x: tf.broadcast_to(x, (2, 3, 4)), ((3, 4),)),
      ("concat", lambda a, b: tf.concat([a, b], axis=0), ((3, 4), (2, 4))),
      ("stack", lambda a, b: tf.stack([a, b], axis=1), ((3, 4), (3, 4))),
      ("unstack", lambda x: tf.add_n(tf.unstack(x, axis=1)), ((3, 4),)),
      ("split", lambda x: tf.split(x, 2, axis=1)[1] * 2.0, ((3, 4),)),
      ("split_sizes", lambda x: tf.split(x, [1, 3], axis=1)[1], ((3, 4),)),
      ("slice", lambda x: tf.slice(x, [1, 0], [2, 3]), ((3, 4),)),
      ("strided_slice", lambda x: x[::2, 1:], ((3, 4),)),
      ("gather", lambda x: tf.gather(x, [2, 0, 2], axis=0), ((3, 4),)),
      ("gather_nd", lambda x: tf.gather_nd(x, [[0, 1], [2, 3], [0, 1]]), ((3, 4),)),
      ("pad", lambda x: tf.pad(x, [[1, 0], [2, 1]]), ((3, 4),)),
      ("pad_reflect", lambda x: tf.pad(x, [[1, 1], [2, 0]], mode="REFLECT"), ((3, 4),)),
      ("reverse", lambda x: tf.reverse(x, [1]), ((3, 4),)),
      ("matrix_inverse", lambda x: tf.linalg.inv(x + 4.0 * tf.eye(3, dtype=x.dtype)),
       ((3, 3),)),
      ("trace", tf.linalg.trace, ((3, 3),)),
      ("diag_part", tf.linalg.diag_part, ((3, 3),)))]
  return cases


def _nn() -> list[Case]:
  nn, image = tf.nn, ((2, 5, 5, 3),)
  return [Case("nn", n, f, s) for n, f, s in (
      ("softmax", nn.softmax, ((3, 4),)), ("log_softmax", nn.log_softmax, ((3, 4),)),
      ("softmax_cross_entropy", lambda z, y: nn.softmax_cross_entropy_with_logits(
          tf.nn.softmax(y), z), ((3, 4), (3, 4))),
      ("sparse_softmax_cross_entropy", lambda z: nn.sparse_softmax_cross_entropy_with_logits(
          [1, 0, 3], z), ((3, 4),)),
      ("sigmoid_cross_entropy", lambda z, y: nn.sigmoid_cross_entropy_with_logits(
          tf.sigmoid(y), z), ((3, 4), (3, 4))),
      ("l2_normalize", lambda x: tf.math.l2_normalize(x, axis=1), ((3, 4),)),
      ("clip_by_norm", lambda x: tf.clip_by_norm(x, 1.0), ((3, 4),)),
      ("bias_add", nn.bias_add, ((3, 4), (4,))),
      ("batch_norm", lambda x, s: nn.batch_normalization(
          x, *nn.moments(x, axes=[0]), None, s, 1e-3), ((5, 4), (4,))),
      ("conv2d", lambda x, w: nn.conv2d(x, w, 1, "SAME"), (image[0], (3, 3, 3, 2))),
      ("conv2d_strided", lambda x, w: nn.conv2d(x, w, 2, "VALID"), (image[0], (2, 2, 3, 2))),
      ("depthwise_conv2d", lambda x, w: nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME"),
       (image[0], (3, 3, 3, 1))),
      ("max_pool", lambda x: nn.max_pool2d(x, 2, 2, "VALID"), image),
      ("avg_pool", lambda x: nn.avg_pool2d(x, 3, 2, "SAME"), image),
      ("top_k", lambda x: nn.top_k(x, 2).values, ((3, 4),)),
      ("sort", lambda x: tf.sort(x, axis=1), ((3, 4),)))]


CASES = _elementwise() + _structural() + _nn()


def _port(case: Case):
  from crossgrad import tf1  # pylint: disable=g-import-not-at-top

  def tf_gradient(op, *grads):
    return tf.gradients(case.fn(*op.inputs), list(op.inputs), grad_ys=list(grads))

  names = tuple(f"x{i}" for i in range(len(case.shapes)))
  return tf1.port(f"coverage_{case.name}", case.fn, tf_gradient, framework="tensorflow",
                  input_names=names, sample=case.sample, register=False)


def _tf_vjp(case: Case, inputs, cotangent):
  xs = [tf.constant(x) for x in inputs]
  with tf.GradientTape() as tape:
    tape.watch(xs)
    y = case.fn(*xs)
  return [tf.convert_to_tensor(g).numpy() for g in tape.gradient(y, xs, cotangent)]


def classify(case: Case) -> tuple[str, str]:
  """(outcome, reason) of one case, in float32."""
  import jax  # pylint: disable=g-import-not-at-top

  from crossgrad.api import jax as api_jax  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  inputs = [x.astype(np.float32) for x in case.sample(rng)]
  try:
    op = _port(case)
    twin = api_jax.get(op)
    y = np.asarray(twin(*inputs))
    cotangent = rng.standard_normal(y.shape).astype(np.float32)
    impl = op.forward.port
    how, program = impl.jax_strategy([*inputs, y, cotangent])
    missing = impl._program(impl._tf_forward, inputs).missing + program.missing  # pylint: disable=protected-access
    expected = _tf_vjp(case, inputs, cotangent)
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      for vjp in (jax.vjp, jax.jit(jax.vjp, static_argnums=0)):
        got = vjp(twin, *inputs)[1](cotangent)
        for a, b in zip(got, expected):
          np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
  except CrossgradError as e:
    return "refused", e.problem
  except AssertionError as e:
    return "wrong", str(e).strip().splitlines()[0]
  except Exception as e:  # pylint: disable=broad-except  # Counted: crossgrad must not.
    return "crashed", f"{type(e).__name__}: {str(e).strip()[:200]}"
  if not missing:
    return "native", ""
  return "fallback", f"{how}: {'; '.join(missing)}"


def missing_types(reason: str) -> list[str]:
  return [part.split()[2] for part in reason.split("; ") if part.startswith("TF op ")
          and "has no xp translation" in part]


def registered() -> dict[str, list[str]]:
  """``{module: op types}`` of TF's registered gradients in `_GRADIENT_MODULES` (read from
  TF's gradient registry, so from TF itself)."""
  from tensorflow.python.framework import ops  # pylint: disable=g-import-not-at-top
  from tensorflow.python.ops import array_grad, math_grad, nn_grad  # pylint: disable=g-import-not-at-top,unused-import
  found = collections.defaultdict(list)
  registry = ops._gradient_registry  # pylint: disable=protected-access
  for op_type in sorted(registry.list()):
    module = getattr(registry.lookup(op_type), "__module__", "").rsplit(".", 1)[-1]
    if module in _GRADIENT_MODULES:
      found[module].append(op_type)
  return found


def _print_registered(translated) -> None:
  for module, op_types in registered().items():
    missing = [t for t in op_types if t not in translated]
    print(f"{module}: {len(op_types) - len(missing)} of {len(op_types)} op types translated; "
          f"without: {', '.join(missing)}")


def main(argv: Sequence[str]) -> None:
  del argv
  from crossgrad.tf1 import handlers  # pylint: disable=g-import-not-at-top
  if _HANDLERS.value:
    print("\n".join(sorted(handlers.HANDLERS)))
    return
  if _REGISTERED.value:
    _print_registered(handlers.HANDLERS)
    return
  counts = collections.defaultdict(collections.Counter)
  missing = collections.Counter()
  for case in CASES:
    outcome, reason = classify(case)
    counts[case.category][outcome] += 1
    missing.update(set(missing_types(reason)))
    if _VERBOSE.value or outcome in ("wrong", "refused", "crashed"):
      print(f"{case.category:13} {case.name:28} {outcome:8} {reason}")
  outcomes = ("native", "fallback", "refused", "wrong", "crashed")
  print(f"{'category':13} " + " ".join(f"{o:>8}" for o in outcomes) + "    total")
  for category, counter in counts.items():
    print(f"{category:13} " + " ".join(f"{counter[o]:8d}" for o in outcomes)
          + f" {sum(counter.values()):8d}")
  total = sum(counts.values(), collections.Counter())
  print(f"{'all':13} " + " ".join(f"{total[o]:8d}" for o in outcomes)
        + f" {sum(total.values()):8d}")
  if missing:
    print("missing TF op types (cases):", ", ".join(f"{t} ({n})" for t, n in
                                                    missing.most_common()))


if __name__ == "__main__":
  usage.run(main)
