"""Input variants derived from an op's sample: shapes and values beyond the one sample the
other rows see (``variant`` rows, docs/cross-check.md).

A size-1 batch (the first slice of every input whose leading axis has the first
differentiable input's size); per differentiable input, each axis set to size 1 (its first
slice) or dropped (its first index), and an extra leading axis of size 1 and of size 2 (two
copies); an extra leading axis on every input at once; every differentiable input scaled by 10
and by 100. An axis of one input is varied only where another input is floating, and must
broadcast against the others (the outputs keep their shapes), as must a leading axis on one
of several inputs; a leading axis of copies must give the sample's outputs (repeated along
it: the op acts on the trailing axes). The op says which it takes:
`accepts` runs the reference forward, and a variant it rejects (raises: the op's declared
contract, ``check_inputs``, ``check_values``; or non-finite outputs where the sample's are
finite) is left out, never failed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from crossgrad.checker import compare, finite_diff
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

POLICIES = ("default", "all", "none")
# What a variant changes: an axis of one input (size 1, dropped), a leading axis (one input,
# all), the batch, the values, the cotangents (zeros: `rows.variant_rows`), the memory
# layout a backend gives the sample (`protocol.Capabilities.LAYOUTS`), a float parameter.
FAMILIES = ("axis", "leading", "batch", "scale", "cotangent", "layout", "param")
# The families whose first variant the backends run by default (every variant: "all"): each
# new shape is a new trace and compile in every compiled mode (and in JAX's eager dispatch),
# the check's dearest step, while the reference's rows cover every variant.
BACKEND_FAMILIES = ("leading", "axis")  # And the zero cotangents, which compile nothing new.
SCALES = (10, 100)
PARAM_FACTOR = 2  # A float parameter's variant: its value times this.
COPIES = 2  # The size of the extra leading axis of more than one element.


@dataclasses.dataclass(frozen=True)
class Variant:
  """One variant: its ``name`` as rows show it (``bias: (5,) -> (1,)``), its inputs, its
  family, the input it changes (None: several), the factor its values are scaled by
  (compared in float64 only: they test the backward's logic, not rounding at large
  magnitudes), the backend's memory layout of the inputs and cotangents (None: its
  default, contiguous), and the parameters it sets (a smooth-L1's ``beta``: a backward
  right only for the declared value)."""

  name: str
  inputs: list[np.ndarray]
  family: str  # One of `FAMILIES`.
  input: str | None = None
  scale: int = 1
  layout: str | None = None
  params: dict = dataclasses.field(default_factory=dict)

  def params_of(self, params: dict) -> dict:
    """``params`` (the op's parameter set) with the variant's."""
    return {**params, **self.params}


def policy(variants: bool | str | None, argument: str = "variants") -> str | None:
  """``variants`` as `cross_check` takes it: "default" (True: eager and one compiled mode
  per backend), "all" (every execution mode) or None (False, "none": no variant rows)."""
  if variants is True or variants == "default":
    return "default"
  if variants is None or variants is False or variants == "none":
    return None
  if variants == "all":
    return "all"
  raise CrossgradError("unknown variants policy", argument=argument,
                       expected=" or ".join(map(repr, POLICIES)), actual=repr(variants))


def for_backends(found: Sequence[Variant], chosen: str) -> list[Variant]:
  """The variants the backends run: every one ("all"), else the first of each of
  `BACKEND_FAMILIES`, the leading axis on every input before one input's."""
  if chosen == "all":
    return list(found)
  ordered = sorted(found, key=lambda v: v.input is not None)  # Stable: all inputs first.
  return [v for family in BACKEND_FAMILIES
          for v in [next((v for v in ordered if v.family == family), None)] if v]


def modes(module: Any, chosen: str) -> tuple[str, ...]:
  """The execution modes a backend runs variants in: eager and its first compiled mode
  ("default"), or every one ("all")."""
  return tuple(module.MODES) if chosen == "all" else tuple(module.MODES[:2])


def _shape(x: np.ndarray) -> str:
  return str(tuple(int(d) for d in x.shape))


def _changed(inputs: Sequence[np.ndarray], i: int, x: np.ndarray) -> list[np.ndarray]:
  return [x if k == i else v for k, v in enumerate(inputs)]


def _per_input(op: OpDef, inputs: Sequence[np.ndarray]) -> list[Variant]:
  found = []
  for i in op.diff_argnums:
    x, name = inputs[i], op.input_names[i]
    if not compare.is_floating(x.dtype):
      continue
    shapes = []
    if any(compare.is_floating(v.dtype) for k, v in enumerate(inputs) if k != i):
      shapes += [(np.take(x, [0], axis=axis), "axis") for axis in range(x.ndim)
                 if x.shape[axis] > 1]
      shapes += [(np.take(x, 0, axis=axis), "axis") for axis in range(x.ndim)
                 if x.shape[axis]]
    shapes += [(x[None], "leading"), (np.stack([x] * COPIES), "leading")]
    found += [Variant(f"{name}: {_shape(x)} -> {_shape(y)}", _changed(inputs, i, y), family,
                      name) for y, family in shapes]
  return found


def _batches(op: OpDef, inputs: Sequence[np.ndarray]) -> list[Variant]:
  """A batch of 1 and of 0: every input whose leading axis has the first differentiable
  input's size cut to its first slice, or to none."""
  first = next((inputs[i] for i in op.diff_argnums if inputs[i].ndim), None)
  if first is None or not first.shape[0]:
    return []
  size = first.shape[0]
  return [Variant(f"batch of {n} (of {size})",
                  [x[:n] if x.ndim and x.shape[0] == size else x for x in inputs], "batch")
          for n in (1, 0) if n < size]


def _float_params(inputs: Sequence[np.ndarray], params: dict) -> list[Variant]:
  return [Variant(f"{k}: {v!r} -> {v * PARAM_FACTOR!r}", list(inputs), "param",
                  params={k: v * PARAM_FACTOR})
          for k, v in sorted(params.items()) if isinstance(v, float) and v]


def derive(op: OpDef, inputs: Sequence[np.ndarray], scaled: bool = True,
           params: dict | None = None) -> list[Variant]:
  """The variants of ``inputs`` (the sample), in order, each set of shapes once (the first
  name kept); ``scaled``: with the scaled values; ``params``: the parameter set, whose
  float parameters each get a variant (their value times `PARAM_FACTOR`)."""
  inputs = [np.asarray(x) for x in inputs]
  found = _batches(op, inputs) + _per_input(op, inputs)
  if len(inputs) > 1:
    found += [Variant(f"all inputs: extra leading axis of {n}",
                      [np.stack([x] * n) for x in inputs], "leading") for n in (1, COPIES)]
  if scaled and any(compare.is_floating(inputs[i].dtype) for i in op.diff_argnums):
    found += [Variant(f"values x{k}", [x * k if i in op.diff_argnums
                                        and compare.is_floating(x.dtype) else x
                                        for i, x in enumerate(inputs)], "scale", scale=k)
              for k in SCALES]
  found += _float_params(inputs, params or {})
  seen, unique = {(tuple(x.shape for x in inputs), 1, ())}, []
  for v in found:
    key = (tuple(x.shape for x in v.inputs), v.scale, tuple(sorted(v.params.items())))
    if key not in seen:
      seen.add(key)
      unique.append(v)
  return unique


def flat(outputs: Any) -> np.ndarray:
  """The floating outputs as one float64 vector (complex ones as pairs of reals)."""
  parts = [np.ravel(compare.as_real(np.asarray(o, np.float64))) for o in
           validation.as_tuple(outputs) if compare.is_floating(np.asarray(o).dtype)]
  return np.concatenate(parts) if parts else np.zeros(0)


def kinked(reference: Any, op: OpDef, params: dict, variant: Variant, outputs: Any,
           seed: int) -> bool:
  """Whether the forward has a kink or a tie at the variant (copies along a reduced axis
  tie a maximum): its one-sided derivatives along a random direction differ, where finite
  differences have no derivative to check (the sample is drawn off kinks)."""
  argnums = [i for i in op.diff_argnums if compare.is_floating(variant.inputs[i].dtype)]
  rng = np.random.default_rng([seed, 55])
  step = {i: finite_diff.uniform(rng, variant.inputs[i].shape) for i in argnums}
  h = finite_diff.STEP * max([1.0] + [float(np.sqrt(np.mean(np.square(variant.inputs[i]))))
                                      for i in argnums if variant.inputs[i].size])

  def at(sign):
    moved = [x + sign * h * step[i] if i in step else x
             for i, x in enumerate(variant.inputs)]
    with np.errstate(all="ignore"):
      return flat(reference.vjp(op, *moved, **params)[0])

  f0 = flat(outputs)
  ahead, behind = (at(1.0) - f0) / h, (f0 - at(-1.0)) / h
  gap = finite_diff.norm(ahead - behind)
  noise = 100 * np.finfo(np.float64).eps * finite_diff.norm(f0) / h
  return bool(gap > 1e-2 * max(finite_diff.norm(ahead), finite_diff.norm(behind)) + noise)


def finite(outputs: Any) -> bool:
  """Every floating output finite."""
  return all(np.all(np.isfinite(o)) for o in validation.as_tuple(outputs)
             if compare.is_inexact(np.asarray(o).dtype))


def accepts(reference: Any, op: OpDef, params: dict, variant: Variant,
            sample_outputs: Any) -> tuple[bool, Any, str]:
  """Whether the op takes the variant: ``(taken, (outputs, vjp_fn) or None, why not)``. An
  axis of one input changed, or a leading axis on one of several, must broadcast against
  the others: the outputs keep the shapes of the sample's (``sample_outputs``, the
  reference's); a leading axis must give the sample's outputs (`_repeated`)."""
  try:
    with np.errstate(all="ignore"):
      outputs, vjp_fn = reference.vjp(op, *variant.inputs, **params)
  except Exception as e:  # pylint: disable=broad-except  # The op's contract rejects it.
    return False, None, f"{type(e).__name__}"
  if finite(sample_outputs) and not finite(outputs):
    return False, None, "non-finite outputs"
  shapes = [np.shape(o) for o in validation.as_tuple(outputs)]
  kept = shapes == [np.shape(o) for o in validation.as_tuple(sample_outputs)]
  one_of_several = variant.input is not None and len(variant.inputs) > 1
  if variant.family == "axis" or (variant.family == "leading" and one_of_several):
    if not kept:
      return False, None, "does not broadcast"
  if variant.family == "leading" and not _repeated(outputs, sample_outputs):
    return False, None, "not the sample's outputs repeated"
  return True, (outputs, vjp_fn), ""


def _repeated(outputs: Any, sample_outputs: Any) -> bool:
  """Whether each output is the sample's, or the sample's repeated along one leading axis:
  the op acts on its inputs' trailing axes, as a leading axis of copies asks (an op reading
  its axes by position, ``axis=1`` in a rank-2 op, computes another function there)."""
  for got, want in zip(validation.as_tuple(outputs), validation.as_tuple(sample_outputs)):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape not in (want.shape, got.shape[:1] + want.shape):
      return False
    if not (compare.is_inexact(got.dtype) or compare.is_inexact(want.dtype)):
      if not np.array_equal(got, np.broadcast_to(want, got.shape)):
        return False
      continue
    rtol = float(np.sqrt(np.finfo(np.result_type(got.dtype, want.dtype)).eps))
    wide = [compare.as_real(a).astype(np.float64) for a in (got, want)]
    scale = float(np.max(np.abs(wide[1][np.isfinite(wide[1])]), initial=0.0))
    if not np.allclose(wide[0], np.broadcast_to(wide[1], wide[0].shape), rtol=rtol,
                       atol=rtol * scale, equal_nan=True):
      return False
  return True
