"""Every entry of crossgrad-port's JAX and TensorFlow tables against the framework itself:
each example call run by JAX (TF) and, rendered by the entry, by NumPy's ``xp`` on the
same random float32 inputs; a planted wrong entry turns them red. The TF calls that
create one op type build it (traced), and their entries come from `tf1.op_xp`, the
templates the TF1 twin's handlers compile too."""

import math

import numpy as np
import pytest

from crossgrad.backends.numpy import xp as numpy_xp
from crossgrad.port import translate
from crossgrad.port.tables import jax as jax_table
from crossgrad.port.tables import tensorflow as tf_table
from crossgrad.port.translate import entry
from crossgrad.tf1 import op_xp


def _arrays():
  found = translate.EXAMPLE_ARRAYS(np.random.default_rng(0))
  return {k: v.astype(np.float32) if v.dtype == np.float64 else
          v.astype(np.int32) if v.dtype.kind == "i" else v for k, v in found.items()}


def _plain(value):
  """A result as NumPy values to compare (arrays, shapes, dtypes and finfo alike)."""
  if isinstance(value, (tuple, list)) or type(value).__name__ == "TensorShape":
    return tuple(_plain(v) for v in value)
  if hasattr(value, "eps") and hasattr(value, "max"):
    return (np.asarray(float(value.eps)), np.asarray(float(value.max)))
  if hasattr(value, "as_numpy_dtype"):
    return np.dtype(value.as_numpy_dtype)
  if isinstance(value, (np.dtype, type)) or type(value).__module__.startswith("numpy.dtypes"):
    return np.dtype(value)
  return np.asarray(value)


def _same(want, got) -> str | None:
  want, got = _plain(want), _plain(got)
  if isinstance(want, tuple) != isinstance(got, tuple):  # A shape as a tuple or a tensor.
    want, got = (np.asarray(v) if isinstance(v, tuple) else v for v in (want, got))
  if isinstance(want, tuple) or isinstance(got, tuple):
    if not (isinstance(want, tuple) and isinstance(got, tuple) and len(want) == len(got)):
      return f"structure {want!r} vs {got!r}"
    return next((m for m in map(_same, want, got) if m), None)
  if isinstance(want, np.dtype) or isinstance(got, np.dtype):
    return None if want == got else f"dtype {want} vs {got}"
  if want.shape != got.shape:
    return f"shape {want.shape} vs {got.shape}"
  if want.dtype.kind == "b" or got.dtype.kind == "b":
    return None if np.array_equal(want, got) else "boolean values differ"
  if not np.allclose(want.astype(np.float64), got.astype(np.float64), rtol=2e-5, atol=2e-5,
                     equal_nan=True):
    return f"values differ by {np.nanmax(np.abs(want - got.astype(want.dtype)))}"
  return None


def mismatches(table, evaluate, keys=None) -> dict:
  """{(key, example): what differs} over the table's examples (``keys``: those only);
  ``evaluate(calls, arrays)`` runs the framework's calls ({id: source}) on ``arrays``."""
  arrays = _arrays()
  found, calls, ours = {}, {}, {}
  for key, e in table.entries.items():
    for example in e.examples if keys is None or key in keys else ():
      try:
        calls[key, example], source = translate.example_sources(table, key, example)
        namespace = {"math": math}
        exec(source, namespace)  # pylint: disable=exec-used
        fn = namespace["example"]
        names = fn.__code__.co_varnames[1:fn.__code__.co_argcount]
        ours[key, example] = fn(numpy_xp, *[arrays[n] for n in names])
      except Exception as err:  # pylint: disable=broad-except
        found[key, example] = f"{type(err).__name__}: {err}"
  for case, want in evaluate({c: calls[c] for c in ours}, arrays).items():
    problem = (f"{type(want).__name__}: {want}" if isinstance(want, Exception)
               else _same(want, ours[case]))
    if problem:
      found[case] = problem
  return found


def _jax_evaluate(calls: dict, arrays: dict) -> dict:
  """The calls in one ``jax.jit`` (one compilation, not one per call); those returning
  Python values (dtypes, finfo) eagerly."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  names, xs = {"jax": jax}, {k: jnp.asarray(v) for k, v in arrays.items()}
  results, traced = {}, {}
  for case, call in calls.items():
    run = lambda a, call=call: eval(call, {**names, **a})  # pylint: disable=eval-used
    try:
      jax.eval_shape(run, xs)
      traced[case] = run
    except Exception:  # pylint: disable=broad-except
      try:
        results[case] = run(xs)
      except Exception as err:  # pylint: disable=broad-except
        results[case] = err
  keys = list(traced)
  compiled = jax.jit(lambda a: [traced[k](a) for k in keys]).lower(xs).compile(
      {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True})
  values = compiled(xs)  # Unoptimized: a third of the compilation time, same values.
  return {**results, **dict(zip(keys, values))}


def _tf_evaluate(calls: dict, arrays: dict) -> dict:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  names = {"tensorflow": tf, **{k: tf.constant(v) for k, v in arrays.items()}}
  results = {}
  for case, call in calls.items():
    try:
      results[case] = eval(call, names)  # pylint: disable=eval-used
    except Exception as err:  # pylint: disable=broad-except
      results[case] = err
  return results


def test_every_jax_entry_is_what_jax_computes():
  assert sum(len(e.examples) for e in jax_table.TABLE.entries.values()) > 200
  assert not mismatches(jax_table.TABLE, _jax_evaluate)


def test_every_tensorflow_entry_is_what_tensorflow_computes():
  assert sum(len(e.examples) for e in tf_table.TABLE.entries.values()) > 200
  assert not mismatches(tf_table.TABLE, _tf_evaluate)


def test_a_planted_wrong_jax_entry_is_red(monkeypatch):
  monkeypatch.setitem(jax_table.TABLE.entries, "jax.numpy.tanh",
                      entry("x, /", "xp.sin({x})", examples=("x",)))
  assert list(mismatches(jax_table.TABLE, _jax_evaluate, keys={"jax.numpy.tanh"})) == [
      ("jax.numpy.tanh", "x")]


def test_a_planted_wrong_op_template_is_red_in_both_tf_translators(monkeypatch):
  """One template: the TF table's entry and the TF1 twin's handler both read it."""
  monkeypatch.setitem(op_xp.TEMPLATES, "Exp", "xp.expm1({0})")
  monkeypatch.setitem(tf_table.TABLE.entries, "tensorflow.math.exp", tf_table._op_entry("Exp"))  # pylint: disable=protected-access
  assert list(mismatches(tf_table.TABLE, _tf_evaluate, keys={"tensorflow.math.exp"})) == [
      ("tensorflow.math.exp", "x")]
  assert op_xp.function("Exp")(numpy_xp, np.float64(1.0)) == pytest.approx(math.e - 1)


def test_each_op_type_call_builds_its_op_type():
  """Traced, each TF call of `OP_TYPES` creates the op type whose template it uses."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  arrays = _arrays()
  wrong = {}
  for api, op_type in tf_table.OP_TYPES.items():
    fn = tf
    for part in api.split("."):
      fn = getattr(fn, part)
    example = tf_table.TABLE.entries[f"tensorflow.{api}"].examples[0]
    names = [n for n in translate.EXAMPLE_SHAPES if n in example.replace(",", " ").split()]
    specs = [tf.TensorSpec(arrays[n].shape, tf.as_dtype(arrays[n].dtype)) for n in names]
    call = eval(f"lambda {', '.join(names)}: fn({example})", {"fn": fn})  # pylint: disable=eval-used
    graph = tf.function(call).get_concrete_function(*specs).graph
    types = {op.type for op in graph.get_operations()}
    if op_type not in types:
      wrong[api] = (op_type, sorted(types))
  assert not wrong
  assert set(tf_table.OP_TYPES.values()) <= set(op_xp.TEMPLATES)
