"""What the checker drives in TensorFlow (`protocol.Backend`, `protocol.HigherOrder`,
`protocol.RoundTrips`): the op run on NumPy inputs eagerly, in a graph, under XLA or through an
export round trip (a SavedModel, or another framework's op added by `add_round_trip`), its
forward mode, second order and transformations, and the precision they run in.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from crossgrad.backends.common import base, op_core, scaled_rules
from crossgrad.backends.tensorflow import export
from crossgrad.backends.tensorflow.emitter import MODES, NAME, get
from crossgrad.registry import validation
from crossgrad.registry.opdef import OpDef

EXTRA_MODES = ("saved_model",)  # Run when asked for; other round trips join by `add_round_trip`.
TRANSFORMS = ("vectorized_map",)
UNSUPPORTED_CHECKS: dict[tuple[str, str], str] = {}
# Round trips from other frameworks (`add_round_trip`): mode -> (the op's TF function, the
# precision scope of its inputs).
_ROUND_TRIPS: dict[str, tuple[Callable[[OpDef, dict], Callable[..., Any]],
                              Callable[[Sequence[Any]], Any]]] = {}


def add_round_trip(mode: str, function: Callable[[OpDef, dict], Callable[..., Any]],
                   precision_scope: Callable[[Sequence[Any]], Any]) -> None:
  """Lets `evaluate` and `evaluate_higher_order` take export mode ``mode``, whose TF function
  another framework makes: ``function(op, params)``, run inside ``precision_scope(inputs)``
  (`protocol.RoundTrips`). The checker, which loads every backend, adds ``jax2tf`` this way."""
  _ROUND_TRIPS[mode] = (function, precision_scope)


def _function(op: OpDef, params: dict, inputs: Sequence[np.ndarray], mode: str):
  """The op's TF function in ``mode``: the emitted op, its SavedModel round trip, or
  another framework's op (`add_round_trip`)."""
  if mode == "saved_model":
    return export.saved_model_round_trip(get(op, **params), inputs)
  if mode in _ROUND_TRIPS:
    return _ROUND_TRIPS[mode][0](op, params)
  return get(op, **params)


def _run_on(device: str, mode: str, arrays: Any, run: Callable[..., Any], op: OpDef, params,
            inputs, *what: Any):
  """``run(fn, *arrays)`` as tensors on ``device``: eagerly, in a graph or under XLA (the
  export round trips run eagerly); results as NumPy (None stays None). The graph of
  (emitted function, mode, device, input shapes and dtypes, ``what`` it runs) is traced
  once (`base.compiled`), in a function of its own (`base.own_code`): TF sees no function
  retrace, so checks at several sizes do not warn of retracing."""
  fn = _function(op, params, inputs, mode)
  call = lambda *a: run(fn, *a)  # pylint: disable=unnecessary-lambda-assignment
  if mode in ("graph", "jit"):
    signature = tuple(None if a is None else (np.shape(a), np.result_type(a))
                      for a in tf.nest.flatten(arrays))
    call = base.compiled((fn, mode, device, signature, *what), lambda: tf.function(
        base.own_code(call), jit_compile=(mode == "jit"), autograph=False))
  scope = (_ROUND_TRIPS[mode][1](inputs) if mode in _ROUND_TRIPS
           else contextlib.nullcontext())
  with tf.device("/device:" + device.upper()), scope:
    tensors = tf.nest.map_structure(lambda a: None if a is None else tf.constant(a), arrays)
    out = call(*tensors)
  return tf.nest.map_structure(lambda t: None if t is None else _host(t), out)


def _host(t) -> np.ndarray:
  """A result as NumPy. A tangent or gradient may come as tf.IndexedSlices (of a gather):
  densified. Read as a view (read-only, as tensors are), not a copy (`.numpy()`): a copy
  per result is most of the check's own cost at a million elements. A 0-d one by
  `.numpy()`: TF hands NumPy a 0-d bfloat16 tensor as a scalar, which `np.asarray` refuses
  ("object __array__ method not producing an array")."""
  t = tf.convert_to_tensor(t)
  return np.asarray(t) if t.shape.rank else np.asarray(t.numpy())


def _vjp(fn: Callable[..., Any], diff: Sequence[int], args: Sequence[Any],
         cots: Sequence[Any]):
  """Outputs (a tuple) and the cotangents of ``args[diff]`` for output cotangents ``cots``."""
  with tf.GradientTape() as tape:
    diff_args = [args[i] for i in diff]
    tape.watch(diff_args)
    outs = validation.as_tuple(fn(*args))
  pairs = [(o, c) for o, c in zip(outs, cots) if c is not None]
  grads = tape.gradient([o for o, _ in pairs], diff_args,
                        output_gradients=[c for _, c in pairs],
                        unconnected_gradients=tf.UnconnectedGradients.ZERO)
  return outs, grads


def evaluate(op: OpDef, params: dict, inputs: Sequence[np.ndarray], cotangent: Sequence[Any],
             *, device: str = "cpu:0", mode: str = "jit"):
  """Outputs (as a tuple) and input cotangents, eagerly, in a graph, under XLA, or through
  an export round trip (``saved_model``, ``jax2tf``)."""
  op_core.check_run(NAME, op, mode, MODES + EXTRA_MODES + tuple(_ROUND_TRIPS), inputs)
  outs, grads = _run_on(device, mode, (list(inputs), list(cotangent)),
                        lambda fn, a, c: _vjp(fn, op.diff_argnums, a, c), op, params, inputs)
  return tuple(outs), base.merge_cotangents(op, grads)


def evaluate_higher_order(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                          cotangent: Sequence[Any], tangents: Sequence[Any] | None,
                          direction: Sequence[Any] | None, *, device: str = "cpu:0",
                          mode: str = "jit"):
  """In one program: the output tangents for input ``tangents`` under a
  `tf.autodiff.ForwardAccumulator`, and the gradient of <vjp(cotangent), direction> with
  respect to each input through nested gradient tapes; None for integer outputs, inputs
  without a gradient, and what is not asked for (``tangents`` or ``direction`` None)."""
  op_core.check_run(NAME, op, mode, MODES + EXTRA_MODES + tuple(_ROUND_TRIPS), inputs)
  diff = op.diff_argnums

  def run(fn, args, cots, tans, dirs):
    diff_args = [args[i] for i in diff]
    out_tangents = second = None
    if tans is not None:
      with tf.autodiff.ForwardAccumulator(diff_args, [tans[i] for i in diff]) as acc:
        outs = validation.as_tuple(fn(*args))
      out_tangents = [acc.jvp(o, unconnected_gradients=tf.UnconnectedGradients.ZERO)
                      if o.dtype.is_floating or o.dtype.is_complex else None
                      for o in outs]
    if dirs is not None:  # The gradient of <vjp, direction>: the vjp of the vjp.
      with tf.GradientTape() as outer:
        outer.watch(diff_args)
        grads = [tf.convert_to_tensor(g) for g in _vjp(fn, diff, args, cots)[1]]
      # None where the backward reads an input only through a mask (leaky_relu): its
      # zeros are made below, on the host; made in the program, TF folds them into a
      # constant of the input's size, which XLA then compiles (1M elements: 16 MB more).
      second = outer.gradient(grads, diff_args, output_gradients=[dirs[i] for i in diff])
    return out_tangents, second

  arrays = (list(inputs), list(cotangent), None if tangents is None else list(tangents),
            None if direction is None else list(direction))
  out_tangents, second = _run_on(device, mode, arrays, run, op, params, inputs,
                                 "higher_order")
  if second is not None:
    second = [np.zeros(np.shape(inputs[i]), np.result_type(inputs[i])) if g is None else g
              for i, g in zip(diff, second)]
  return (None if out_tangents is None else tuple(out_tangents),
          None if second is None else base.merge_cotangents(op, second))


def evaluate_transformed(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                         cotangent: Sequence[Any], *, device: str = "cpu:0",
                         transforms: Sequence[str] = TRANSFORMS):
  """Outputs and input cotangents of a batch (axis 0 of every array) per transformation:
  the per-example VJP under `tf.vectorized_map` in a `tf.function`, as users call it: where
  an op has no vectorization rule (pfor; e.g. the bitcasts of `xp.sort`'s total order) TF
  falls back to a loop over the batch."""
  for transform in transforms:
    base.check_mode(NAME, transform, TRANSFORMS)
  validation.check_input_count(op, NAME, inputs)
  present = [k for k, c in enumerate(cotangent) if c is not None]
  n_outputs = len(cotangent)  # Not the arrays: the compiled runner outlives this call.

  def run(fn, args, cots):
    def example(elems):
      args, given = elems
      cots = [None] * n_outputs
      for k, c in zip(present, given):
        cots[k] = c
      return _vjp(fn, op.diff_argnums, args, cots)
    return tf.vectorized_map(example, (args, cots))

  outs, grads = _run_on(device, "graph", (list(inputs), [cotangent[k] for k in present]), run,
                        op, params, inputs, ("vectorized_map", len(cotangent), tuple(present)))
  return {t: (tuple(outs), base.merge_cotangents(op, grads)) for t in transforms}


@contextlib.contextmanager
def precision_scope(arrays: Sequence[Any], float32: str | None = None):
  """TensorFlow keeps every dtype as it is; with ``float32="highest"``, TensorFloat-32
  execution (on by default on Ampere and later GPUs) is off for the scope."""
  del arrays
  if float32 != "highest":
    yield
    return
  enabled = tf.config.experimental.tensor_float_32_execution_enabled()
  tf.config.experimental.enable_tensor_float_32_execution(False)
  try:
    yield
  finally:
    tf.config.experimental.enable_tensor_float_32_execution(enabled)


def scaled_kernel(fn: Callable[..., Any], factor: float) -> Callable[..., Any] | None:
  """``fn`` (a kernel) with its `tf.custom_gradient` function giving ``factor`` times its
  cotangents, where ``fn`` is one or its closure or globals hold one (`scaled_rules`); None
  where it reaches none. The copy is called as the original is (a call with keyword arguments only
  bypasses the rule in both)."""
  return scaled_rules.scaled_kernel(fn, _is_rule, lambda rule: _scaled_rule(rule, factor))


def _is_rule(value: Any) -> bool:
  decorator = getattr(value, "_tf_decorator", None)
  return getattr(decorator, "decorator_name", None) == "custom_gradient"


def _scaled_rule(rule: Any, factor: float) -> Any:
  """A `tf.custom_gradient` function of ``rule``'s forward whose gradient function returns
  ``factor`` times ``rule``'s (input and variable cotangents alike)."""
  forward = rule._tf_decorator.decorated_target  # pylint: disable=protected-access

  def times(c):
    return c * factor if isinstance(c, tf.Tensor) and (c.dtype.is_floating
                                                        or c.dtype.is_complex) else c

  @tf.custom_gradient
  def scaled(*args, **kwargs):
    outputs, gradient = forward(*args, **kwargs)
    return outputs, lambda *g, **kw: tf.nest.map_structure(times, gradient(*g, **kw))
  return scaled
