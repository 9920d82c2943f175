"""``--search=N``: a property-based search (Hypothesis) for inputs where an op's reference
backward is not the derivative of its forward, shrunk to the smallest such input.

Drawn from the op's sample, N examples per op and parameter set: every length the floating
inputs' axes have becomes one length in 1..min(2n, 6) (one choice per length, so axes that
match keep matching: a matmul's inner axes, a bias and its channels), optionally with an
extra leading axis of 1 or 2 on every floating input, and values drawn in the sample's range
scaled by 1, 10 or 100 (on a grid of 1/1024 of it). An example the reference forward rejects
(it raises, or gives non-finite outputs), where it has a kink or a tie, or where an extra
leading axis is not what the op computes slice by slice (it reads its axes by position) is
the op's contract, not a failure; so is one where the forward amplifies changes of its
inputs more than 1e8 times (near a singular matrix), where float64 finite differences cannot
judge. On the rest the reference backward is checked against finite differences in float64
(the ``fd`` rows) and, where they disagree, confirmed by the backward's diagnosis (a
Jacobian at two step sizes; `diagnosis.backward`), so noise is never reported. Hypothesis
shrinks a failure to the fewest elements and the simplest values it can; that example is one
failing ``search`` row with its diagnosis, and `write_repros` saves it as a script.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Iterable, Sequence

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, finite_diff, variants
from crossgrad.checker.diagnosis import backward, variant_causes
from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.checker.report import Check, Row
from crossgrad.checker.rows import finite_differences
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

SCALES = (1.0, 10.0, 100.0)
LEADING = ((), (1,), (2,))  # An extra leading axis on every floating input.
AMPLIFICATION = 1e8  # The forward's relative condition past which an example is left out.
GRID = 1024  # Values are multiples of the range / GRID.
LONGEST = 6  # The longest axis drawn: examples stay small enough for a Jacobian each.


@dataclasses.dataclass(frozen=True)
class Found:
  """The smallest failing example: its inputs, how it was made (``name``), its failing fd
  row (None where the backward raised) and the diagnosis there (never None: an example
  without one is not a failure)."""

  name: str
  inputs: list[np.ndarray]
  fd: Row | None
  diagnosis: Diagnosis


def examples(value: Any, argument: str = "search") -> int:
  """``search`` as `cross_check` takes it: a count of examples per op, 0 for none."""
  if isinstance(value, bool) or not isinstance(value, int) or value < 0:
    raise CrossgradError("the search takes a count of examples per op", argument=argument,
                         expected="an integer >= 0", actual=repr(value))
  return value


def _hypothesis():
  try:
    import hypothesis  # pylint: disable=g-import-not-at-top
    from hypothesis import strategies  # pylint: disable=g-import-not-at-top
    from hypothesis.extra import numpy as hnumpy  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise CrossgradError("the search needs Hypothesis", argument="search",
                         expected="hypothesis installed (pip install 'crossgrad[search]')",
                         actual="not installed") from e
  return hypothesis, strategies, hnumpy


def _strategy(op: OpDef, sample: Sequence[np.ndarray]):
  """Examples as ``(name, inputs)``; integer and boolean inputs keep their sample, and the
  lengths of their axes stay."""
  hypothesis, st, hnp = _hypothesis()
  floating = [i for i, x in enumerate(sample) if compare.is_floating(x.dtype)]
  pinned = {d for i, x in enumerate(sample) if i not in floating for d in x.shape}
  lengths = sorted({d for i in floating for d in sample[i].shape} - pinned)
  ranges = {i: (float(np.min(sample[i], initial=0.0)), float(np.max(sample[i], initial=0.0)))
            for i in floating}

  @st.composite
  def example(draw):
    sizes = {d: draw(st.integers(1, max(2, min(2 * d, LONGEST)))) for d in lengths}
    leading = draw(st.sampled_from(LEADING))
    scale = draw(st.sampled_from(SCALES))
    inputs = list(sample)
    for i in floating:
      shape = leading + tuple(sizes.get(d, d) for d in sample[i].shape)
      hypothesis.assume(int(np.prod(shape)) <= backward.JACOBIAN_LIMIT)
      lo, hi = ranges[i] if ranges[i][0] < ranges[i][1] else (ranges[i][0] - 1, ranges[i][1] + 1)
      lo, hi = scale * lo, scale * hi
      values = draw(hnp.arrays(np.float64, shape, elements=st.floats(
          lo, hi, allow_nan=False, allow_infinity=False)))
      step = (hi - lo) / GRID  # On a grid: no value is nearer 0 than finite differences see.
      inputs[i] = np.clip(np.round(values / step) * step, lo, hi)
    names = [f"{op.input_names[i]}: {tuple(int(d) for d in sample[i].shape)} -> "
             f"{tuple(int(d) for d in inputs[i].shape)}" for i in floating
             if inputs[i].shape != sample[i].shape]
    name = ", ".join(names + ([f"values x{scale:g}"] if scale != 1 else [])) or "the sample's shapes"
    return name, inputs

  return example()


def _sliced(numpy: Any, op: OpDef, params: dict, inputs: list[np.ndarray],
            sample: Sequence[np.ndarray], outputs: Any) -> bool:
  """Whether an example with an extra leading axis is what the op computes on each slice
  along it, where an output keeps that axis (an op reading its axes by position, ``axis=1``
  in a rank-2 op, computes another function there: not the op's contract); True for an
  example without one, and for outputs reduced over it."""
  led = [i for i, x in enumerate(inputs) if x.ndim > np.ndim(sample[i])]
  if not led:
    return True
  size = inputs[led[0]].shape[0]
  for k in range(size):
    try:
      with np.errstate(all="ignore"):
        want = numpy.vjp(op, *[x[k] if i in led else x for i, x in enumerate(inputs)],
                         **params)[0]
    except Exception:  # pylint: disable=broad-except
      return False
    for got, one in zip(validation.as_tuple(outputs), validation.as_tuple(want)):
      got, one = np.asarray(got, np.float64), np.asarray(one, np.float64)
      if got.shape == one.shape:
        continue  # Reduced over the leading axis: nothing to compare slice by slice.
      if got.shape != (size,) + one.shape or not np.allclose(
          got[k], one, rtol=1e-7, atol=1e-7 * float(np.max(np.abs(one), initial=1.0))):
        return False
  return True


def _amplifies(numpy: Any, op: OpDef, params: dict, inputs: list[np.ndarray], outputs: Any,
               seed: int) -> bool:
  """Whether the forward amplifies a change of its inputs more than `AMPLIFICATION` times
  (along a random direction, relative to the inputs' and outputs' norms, each at least 1):
  near a singular matrix, where float64 finite differences cannot judge a backward."""
  rng = np.random.default_rng([seed, 57])
  floating = [i for i, x in enumerate(inputs) if compare.is_floating(x.dtype)]
  direction = {i: finite_diff.uniform(rng, inputs[i].shape) for i in floating}
  size = np.sqrt(sum(finite_diff.norm(d) ** 2 for d in direction.values())) or 1.0
  norm_x = np.sqrt(sum(finite_diff.norm(inputs[i]) ** 2 for i in floating))
  h = finite_diff.STEP * max(1.0, norm_x / np.sqrt(max(1, sum(inputs[i].size
                                                                for i in floating))))

  def at(sign):
    moved = [x + sign * h * direction[i] / size if i in direction else x
             for i, x in enumerate(inputs)]
    with np.errstate(all="ignore"):
      return variants.flat(numpy.vjp(op, *moved, **params)[0])

  change = finite_diff.norm((at(1.0) - at(-1.0)) / (2 * h))
  ratio = change * max(1.0, norm_x) / max(1.0, finite_diff.norm(variants.flat(outputs)))
  return not np.isfinite(ratio) or ratio > AMPLIFICATION


def _raises_at_these_shapes(op: OpDef, params: dict, inputs: list[np.ndarray],
                            sample: Sequence[np.ndarray], seed: int) -> bool:
  """Whether the backward raises at the example's shapes with other values too (uniform in
  each floating input's range on the sample): a raise that follows the shapes, not one
  that follows the values."""
  rng = np.random.default_rng([seed, 56])
  fresh = [rng.uniform(np.min(s, initial=0.0), np.max(s, initial=0.0) or 1.0, x.shape)
           if compare.is_floating(x.dtype) else x for x, s in zip(inputs, sample)]
  try:
    with np.errstate(all="ignore"):
      variant_causes.shape_mismatch(op, params, fresh)
  except Exception:  # pylint: disable=broad-except
    return True
  return False


def _failure(op: OpDef, params: dict, name: str, inputs: list[np.ndarray],
             sample: Sequence[np.ndarray], sample_outputs: Any, seed: int) -> Found | None:
  """The example's failure, where its fd row fails and the diagnosis confirms a wrong
  backward; None where the op does not take it, or its backward is right there."""
  numpy = base.load("numpy")
  variant = variants.Variant(name, inputs, "search")
  taken, result, _ = variants.accepts(numpy, op, params, variant, sample_outputs)
  if (not taken or variants.kinked(numpy, op, params, variant, result[0], seed)
      or not _sliced(numpy, op, params, inputs, sample, result[0])
      or _amplifies(numpy, op, params, inputs, result[0], seed)):
    return None
  try:
    with np.errstate(all="ignore"):  # Steps may leave the domain (log at 0): read as such.
      rows = finite_differences.finite_difference_rows(op, params, inputs, seed)
  except Exception:  # pylint: disable=broad-except  # The backward raises: diagnosed below.
    rows = None
  failed = [r for r in rows or [] if r.check == Check.FD and not r.ok]
  if rows is not None and not failed:
    return None
  try:
    with np.errstate(all="ignore"):
      diagnosis = (variant_causes.shape_mismatch(op, params, inputs, name)
                   or backward.diagnose(op, params, inputs, seed))
  except Exception as e:  # pylint: disable=broad-except
    if not _raises_at_these_shapes(op, params, inputs, sample, seed):
      return None  # Only at these values (a singular matrix): the derivative's domain.
    diagnosis = variant_causes.raised(op, e, name, None)
  if diagnosis is None or diagnosis.kind == Kind.ILL_CONDITIONED:
    return None
  fd = failed[0] if failed else None
  return Found(name, inputs, fd, diagnosis)


def smallest_failure(op: OpDef, params: dict, sample: Sequence[np.ndarray], count: int,
           seed: int = 0) -> Found | None:
  """The smallest failing example of ``count`` drawn from ``sample`` (float64), or None."""
  hypothesis, _, _ = _hypothesis()
  sample = [np.asarray(x) for x in sample]
  try:
    with np.errstate(all="ignore"):
      sample_outputs = base.load("numpy").vjp(op, *sample, **params)[0]
  except Exception:  # pylint: disable=broad-except  # The sample's own rows say so.
    return None
  strategy = _strategy(op, sample)
  settings = hypothesis.settings(
      max_examples=count, deadline=None, database=None, derandomize=True,
      suppress_health_check=list(hypothesis.HealthCheck), report_multiple_bugs=False,
      phases=(hypothesis.Phase.generate, hypothesis.Phase.shrink))
  try:
    name, inputs = hypothesis.find(
        strategy, lambda e: _failure(op, params, *e, sample, sample_outputs, seed) is not None,
        settings=settings)
  except hypothesis.errors.NoSuchExample:
    return None
  return _failure(op, params, name, inputs, sample, sample_outputs, seed)


_REPRO = '''"""The smallest input crossgrad's search found where the backward of {op!r} is not the
derivative of its forward ({name}). Runs the check of the op there:
python {script}
"""

import os

import numpy as np

import crossgrad as cg
{load}
HERE = os.path.dirname(os.path.abspath(__file__))
ARRAYS = np.load(os.path.join(HERE, {npz!r}))
INPUTS = [ARRAYS[f"input_{{i}}"] for i in range({count})]

report = cg.cross_check([{op!r}], backends=[], inputs=INPUTS, variants="none")
print(report.table())
'''


def source_of(op: OpDef) -> str | None:
  """The file that defines ``op``, where it is not crossgrad's own (a repro imports it)."""
  source = os.path.abspath(op.forward.__code__.co_filename)
  ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  return None if source.startswith(ours + os.sep) else source


def write_repros(rows: Iterable[Any], directory: str) -> list[str]:
  """For each failing ``search`` row, ``DIR/search_<op>.py`` and its inputs (``.npz``):
  the scripts' paths."""
  paths = []
  for row in rows:
    found = row.diagnosis
    if isinstance(found, dict):  # A row read back from a report's JSON.
      found = Diagnosis.from_dict(found)
    if row.check != Check.SEARCH or found is None or "inputs" not in found.values:
      continue
    stem = "search_" + re.sub(r"[^A-Za-z0-9_]+", "_", row.op)
    os.makedirs(directory, exist_ok=True)
    inputs = [np.asarray(x) for x in found.values["inputs"]]
    np.savez(os.path.join(directory, stem + ".npz"),
             **{f"input_{i}": x for i, x in enumerate(inputs)})
    source = found.values.get("source")
    load = f"\nimport runpy\n\nrunpy.run_path({source!r})  # Registers the op.\n" if source else ""
    path = os.path.join(directory, stem + ".py")
    with open(path, "w", encoding="utf-8") as f:
      f.write(_REPRO.format(op=row.op, name=row.variant, script=path, load=load,
                            npz=stem + ".npz", count=len(inputs)))
    paths.append(path)
  return paths
