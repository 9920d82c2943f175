"""Which mistake a wrong backward makes: each input's cotangent against the true VJP.

The true VJP is the float64 Jacobian of the forward (of the surrogate, for a surrogate op's
other inputs) by central differences, transposed: ``T(g)``, in JAX's convention for complex
arrays, as backwards are written. The backward ``B(g)`` is tested, per input, for the
mistakes people make, in this order: it ignores ``g`` (the same for two cotangents), it is
not linear in ``g`` (``B(2g) != 2 B(g)``), two inputs' cotangents are swapped, it is a
constant times ``T`` (``sign`` for -1), the conjugate of ``T``, its transpose, right except
on some elements; else ``unknown`` with the numbers. Nothing is claimed that the numbers do
not show for two random cotangents. A right backward that finite differences cannot confirm
(two step sizes disagree, the forward's condition number is large) is ``ill_conditioned``.
Inputs too large for a Jacobian are tested along random directions (`_large`).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, finite_diff
from crossgrad.checker.diagnosis import error_map, source_lines
from crossgrad.checker.diagnosis.kinds import Diagnosis, Kind
from crossgrad.registry import validation
from crossgrad.registry.opdef import OpDef

# Relative agreement that counts as equal: finite differences in float64 are good to about
# 1e-8 of the Jacobian's scale; the check's own fd rows fail above 1e-6.
CLOSE = 1e-5
JACOBIAN_LIMIT = 1024  # Real input elements a Jacobian by finite differences covers.
# A relative condition number above this, with finite differences that two step sizes do not
# reproduce to the fd rows' tolerance, is what makes an fd row fail for a right backward:
# the forward's curvature and rounding grow with it.
ILL_CONDITIONED = 1e3


def close(a: np.ndarray, b: np.ndarray, tolerance: float = CLOSE) -> bool:
  """Equal within ``tolerance`` of the larger of the two (arrays of one shape)."""
  scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
  return bool(np.max(np.abs(a - b), initial=0.0) <= tolerance * scale + 1e-300)


@dataclasses.dataclass
class _Input:
  """One differentiable input: the backward's cotangents and the true ones, for the
  cotangents g1, g2 (and B for 2 g1; T for conj(g1), conj(g2)); ``noise``: how far finite
  differences with two step sizes are apart, relative to the Jacobian's largest entry;
  ``condition``: the forward's relative condition number in this input."""

  index: int
  name: str
  b: list[np.ndarray]
  t: list[np.ndarray]
  noise: float
  condition: float
  oracle: str  # What it is the derivative of: "forward" or "surrogate".

  @property
  def tolerance(self) -> float:
    """What counts as equal to the true cotangents: `CLOSE`, or ten times their noise."""
    return max(CLOSE, 10 * self.noise)

  def near(self, b: np.ndarray, t: np.ndarray) -> bool:
    return close(b, t, self.tolerance)

  def right(self) -> bool:
    return all(self.near(b, t) for b, t in zip(self.b[:2], self.t[:2]))


def diagnose(op: OpDef, params: dict, inputs: Sequence[np.ndarray], seed: int = 0,
             in_time: Callable[[], bool] = lambda: True) -> Diagnosis | None:
  """What is wrong with the reference backward of ``op`` at ``inputs``; None where each
  input's cotangent is the true one (or none can be computed: no oracle, no finite
  derivative). Inputs of more than `JACOBIAN_LIMIT` elements are tested only for the
  mistakes directional derivatives show (`_large`). Raises TimeoutError once ``in_time()``
  is False."""
  inputs = [_wide(x) for x in inputs]
  reference = base.load("numpy")
  outputs, vjp_fn = reference.vjp(op, *inputs, **params)
  outputs = validation.as_tuple(outputs)
  rng = np.random.default_rng([seed, 46])
  gs = [[_random(rng, o) for o in outputs] for _ in range(2)]
  backward = [vjp_fn(_mirror(g, outputs)) for g in (gs[0], gs[1], [_times(2, u) for u in gs[0]])]
  checked = [c for i in op.diff_argnums
             if (c := _checked(op, params, inputs, i, gs, [b[i] for b in backward],
                               in_time)) is not None]
  wrong = [c for c in checked if not c.right()]
  large = [d for i in op.diff_argnums
           if (d := _large(op, params, inputs, i, gs, [b[i] for b in backward])) is not None]
  if not wrong and not large:
    noisy = [c for c in checked
             if c.noise > finite_diff.TOLERANCE and c.condition >= ILL_CONDITIONED]
    return _ill_conditioned(op, noisy[0]) if noisy else None
  found = (_swapped(wrong) or [_kind(c, inputs, op.input_names) for c in wrong]) + large
  return _combined(op, found, wrong)


def _checked(op: OpDef, params: dict, inputs: list[np.ndarray], i: int, gs: list,
             cotangents: list, in_time: Callable[[], bool]) -> _Input | None:
  """Input ``i``'s backward ``cotangents`` (for g1, g2, 2 g1) and true ones; None where it
  has no oracle (declared), no cotangent, too many elements, or finite differences give
  no finite derivative."""
  oracle = _oracle(op, i)
  if (oracle is None or compare.as_real(inputs[i]).size > JACOBIAN_LIMIT
      or cotangents[0] is None):
    return None
  xp = base.load("numpy").xp
  jacobian, noise, condition = _jacobian(lambda *xs: oracle(xp, *xs, **params), inputs, i,
                                         in_time)
  if not np.all(np.isfinite(jacobian)):  # A step left the domain (log at 1e-39).
    return None
  truth = [_true_vjp(jacobian, g, inputs[i]) for g in gs]
  truth += [_true_vjp(jacobian, [None if u is None else np.conj(u) for u in g], inputs[i])
            for g in gs]
  surrogate = op.surrogate is not None and i not in op.exact_argnums
  return _Input(i, op.input_names[i], [np.asarray(c) for c in cotangents], truth, noise,
                condition, "surrogate" if surrogate else "forward")


def _large(op: OpDef, params: dict, inputs: list[np.ndarray], i: int, gs: list,
           cotangents: list) -> Diagnosis | None:
  """For a real input of more than `JACOBIAN_LIMIT` elements: ignores g, not linear in g,
  or a constant times the true cotangent, from <B(g), t> against <g, J t> (J t by central
  differences along a random t); else None where they agree, ``unknown`` where not."""
  oracle = _oracle(op, i)
  if (oracle is None or compare.as_real(inputs[i]).size <= JACOBIAN_LIMIT
      or cotangents[0] is None or np.iscomplexobj(inputs[i])):
    return None
  name, b = op.input_names[i], [np.asarray(c) for c in cotangents]
  xp = base.load("numpy").xp
  t = finite_diff.uniform(np.random.default_rng([i, 46]), inputs[i].shape)
  h = finite_diff.STEP * max(1.0, float(np.sqrt(np.mean(np.square(inputs[i])))))

  def at(x):
    varied = [x if k == i else v for k, v in enumerate(inputs)]
    with np.errstate(all="ignore"):
      return [np.asarray(o) for o in validation.as_tuple(oracle(xp, *varied, **params))]

  jt = [(p - m) / (2 * h) for p, m in zip(at(inputs[i] + h * t), at(inputs[i] - h * t))]
  along = [sum(finite_diff.dot(u, d) for u, d in zip(g, jt) if u is not None) for g in gs]
  found = _linearity(name, b, not np.isclose(along[0], along[1], rtol=CLOSE))
  if found:
    return found
  ratios = [finite_diff.dot(b[k], t) / along[k] if along[k] else np.nan for k in (0, 1)]
  if np.all(np.isfinite(ratios)) and np.isclose(*ratios, rtol=1e-4):
    surrogate = op.surrogate is not None and i not in op.exact_argnums
    return None if np.isclose(ratios[0], 1.0, rtol=1e-4) else _scaled(
        name, ratios[0], "surrogate" if surrogate else "forward", " along a random direction")
  return Diagnosis(Kind.UNKNOWN, f"the cotangent of {name} is not the derivative: along a "
                   f"random direction it gives {ratios[0]:.3g} and {ratios[1]:.3g} times the "
                   f"true value for two cotangents (too large, {inputs[i].size} elements, to "
                   "compare element by element)", input=name,
                   values={"ratios": [float(r) for r in ratios]})


def _wide(x: np.ndarray) -> np.ndarray:
  x = np.asarray(x)
  if np.iscomplexobj(x):
    return x.astype(np.complex128)
  return x.astype(np.float64) if compare.is_floating(x.dtype) else x


def _random(rng: np.random.Generator, o: np.ndarray) -> np.ndarray | None:
  if not compare.is_inexact(o.dtype):
    return None
  u = finite_diff.uniform(rng, o.shape)
  return u + 1j * finite_diff.uniform(rng, o.shape) if np.iscomplexobj(o) else u


def _times(k: float, u):
  return None if u is None else k * u


def _mirror(g: list, outputs: tuple):
  return tuple(g) if len(outputs) > 1 else g[0]


def _oracle(op: OpDef, i: int) -> Callable | None:
  """The function input ``i``'s cotangent differentiates: the forward (its outputs), or a
  surrogate op's surrogate; None for a declared gradient's declared inputs."""
  if op.gradient == "exact" or i in op.exact_argnums:
    return lambda xp, *xs, **kw: op.forward(xp, *xs, **kw)[0]
  return op.surrogate if op.gradient == "surrogate" else None


def _jacobian(f: Callable, inputs: list[np.ndarray], i: int,
              in_time: Callable[[], bool]) -> tuple[np.ndarray, float, float]:
  """d(floating outputs of f, as real pairs, flat) / d(input i, as real pairs, flat) by
  central differences; how far those with twice the step are, relative to its largest
  entry; and f's relative condition number in input i, ||J|| ||x|| / ||f(x)||."""
  x = compare.as_real(inputs[i]).astype(np.float64)
  h = finite_diff.STEP * max([1.0] + [float(np.sqrt(np.mean(np.square(np.abs(v)))))
                                      for v in inputs if compare.is_inexact(v.dtype) and v.size])

  def at(flat):
    with np.errstate(all="ignore"):  # A non-finite derivative is read as such.
      return outputs(flat)

  def outputs(flat):
    varied = flat.reshape(x.shape)
    swapped = list(inputs)
    swapped[i] = compare.as_complex(varied) if np.iscomplexobj(inputs[i]) else varied
    outs = validation.as_tuple(f(*swapped))
    return np.concatenate([np.ravel(compare.as_real(np.asarray(o, np.result_type(o, 1.0))))
                           for o in outs if compare.is_inexact(np.asarray(o).dtype)])

  flat = x.ravel()
  jacobians = []
  for size in (h, 2 * h):
    columns = []
    for j in range(flat.size):
      if not in_time():
        raise TimeoutError(f"the Jacobian of {flat.size} elements took too long")
      step = np.zeros_like(flat)
      step[j] = size
      columns.append((at(flat + step) - at(flat - step)) / (2 * size))
    jacobians.append(np.stack(columns, axis=1))
  fine, coarse = jacobians
  scale = float(np.max(np.abs(fine), initial=0.0)) or 1.0
  value = float(np.linalg.norm(at(flat)))
  condition = (float(np.linalg.norm(fine)) * float(np.linalg.norm(flat)) / value if value
               else np.inf)
  return fine, float(np.max(np.abs(fine - coarse), initial=0.0)) / scale, condition


def _true_vjp(jacobian: np.ndarray, g: list, like: np.ndarray) -> np.ndarray:
  """The true cotangent of an input shaped ``like`` for output cotangents ``g``, in JAX's
  convention: conj(J^T conj(g)) on real pairs."""
  c = np.concatenate([np.ravel(compare.as_real(np.conj(u))) for u in g if u is not None])
  r = (jacobian.T @ c).reshape(compare.as_real(like).shape)
  return np.conj(compare.as_complex(r)) if np.iscomplexobj(like) else r


def _swapped(wrong: list[_Input]) -> list[Diagnosis] | None:
  """Two inputs whose cotangents are each other's, as a diagnosis naming the first."""
  for a in wrong:
    for b in wrong:
      if (a.index < b.index and a.b[0].shape == b.b[0].shape
          and all(b.near(a.b[k], b.t[k]) and a.near(b.b[k], a.t[k]) for k in (0, 1))):
        return [Diagnosis(Kind.SWAPPED_COTANGENTS,
                          f"the cotangents of {a.name} and {b.name} are swapped: the backward "
                          f"returns {b.name}'s cotangent in {a.name}'s place and {a.name}'s in "
                          f"{b.name}'s; return them in the order of the forward's inputs",
                          input=a.name, values={"inputs": [a.name, b.name]})]
  return None


def _kind(c: _Input, inputs: list[np.ndarray], names: Sequence[str]) -> Diagnosis:
  """The first mistake of the module docstring that input ``c``'s numbers show."""
  b, t = c.b, c.t
  found = _linearity(c.name, b, not c.near(t[0], t[1]))
  if found:
    return found
  factor = _ratio(b[0], t[0])
  if factor is not None and factor != 0 and all(c.near(b[k], factor * t[k]) for k in (0, 1)):
    return _scaled(c.name, factor, c.oracle)
  if np.iscomplexobj(b[0]) and (all(c.near(b[k], np.conj(t[k])) for k in (0, 1))
                                or all(c.near(b[k], np.conj(t[k + 2])) for k in (0, 1))):
    return Diagnosis(Kind.CONJUGATE, f"the cotangent of {c.name} is the complex conjugate of "
                     "the right one: backwards follow JAX's convention (g * f'(z) for a "
                     "holomorphic f, docs/dtypes.md)", input=c.name)
  square = b[0].ndim >= 2 and b[0].shape[-1] == b[0].shape[-2]
  if square and all(c.near(b[k], np.swapaxes(t[k], -1, -2)) for k in (0, 1)):
    return Diagnosis(Kind.TRANSPOSED, f"the cotangent of {c.name} is the transpose of the "
                     "right one: swap the operands of its matmul or transpose the result",
                     input=c.name)
  return _elements(c, inputs, names) or _unknown(c)


def _linearity(name: str, b: list[np.ndarray], true_differs: bool) -> Diagnosis | None:
  """``ignores_cotangent`` (B(g1) = B(g2) where the true ones differ) or
  ``not_linear_in_cotangent`` (B(2 g1) != 2 B(g1)), else None."""
  if close(b[0], b[1]) and true_differs:
    return Diagnosis(Kind.IGNORES_COTANGENT, f"the cotangent of {name} ignores g: it is the "
                     "same for different cotangents; multiply the derivative by g", input=name)
  if not close(b[2], 2 * b[0]):
    ratio = _number(_ratio(b[2], b[0]))
    return Diagnosis(Kind.NOT_LINEAR_IN_COTANGENT,
                     f"the cotangent of {name} is not linear in g: doubling g multiplies it "
                     f"by {ratio}, not 2; a backward is g times the derivative",
                     input=name, values={"doubling_g_multiplies_by": ratio})
  return None


def _scaled(name: str, factor: float, oracle: str, how: str = "") -> Diagnosis:
  """``sign`` for a factor of -1, else ``scale``."""
  factor = float(f"{factor:.6g}")
  if factor == -1:
    return Diagnosis(Kind.SIGN, f"the cotangent of {name} has the wrong sign: it is -1 times "
                     f"the derivative of the {oracle}{how}", input=name, factor=-1.0)
  return Diagnosis(Kind.SCALE, f"the cotangent of {name} is {factor:g} times the derivative "
                   f"of the {oracle}{how}: remove the factor {factor:g}", input=name,
                   factor=factor)


def _ratio(b: np.ndarray, t: np.ndarray) -> float | None:
  """The real least-squares factor c of b = c t, None where t is 0 or c is not real."""
  denominator = np.vdot(t, t).real
  if denominator == 0:
    return None
  c = np.vdot(t, b) / denominator
  return float(c.real) if abs(c.imag) <= CLOSE * abs(c) else None


def _number(x: float | None) -> float | None:
  return None if x is None else float(f"{x:.3g}") + 0.0  # No -0.0.


def _elements(c: _Input, inputs: list[np.ndarray], names: Sequence[str]) -> Diagnosis | None:
  """Right except on some elements (at least one in ten right, for both cotangents)."""
  b, t = c.b, c.t
  scale = max(float(np.max(np.abs(x), initial=0.0)) for x in (*b[:2], *t[:2])) or 1.0
  bad = np.logical_or(*(np.abs(b[k] - t[k]) > c.tolerance * scale for k in (0, 1)))
  count, total = int(bad.sum()), bad.size
  if count == 0 or total - count < max(1, total // 10):
    return None
  where = [_interval(names[k], x, bad) for k, x in enumerate(inputs)
           if np.shape(x) == bad.shape and compare.is_floating(np.asarray(x).dtype)]
  described = next((w for w in where if w), None)
  at = np.unravel_index(int(np.argmax(np.abs(b[0] - t[0]))), bad.shape)
  place = f"where {described}" if described else "at elements no input range singles out"
  return Diagnosis(
      Kind.ELEMENTS,
      f"the cotangent of {c.name} is right except on {count} of {total} elements, {place} "
      f"(at {list(map(int, at))}: {_number(_real(b[0][at]))} vs the true "
      f"{_number(_real(t[0][at]))}); check the branch or mask that covers them",
      input=c.name, values={"wrong": count, "of": total, "where": described or "",
                            "error_map": error_map.error_map(b[0], t[0])})


def _real(x) -> float:
  return float(np.abs(x)) if np.iscomplexobj(x) else float(x)


def _interval(name: str, x: np.ndarray, bad: np.ndarray) -> str:
  """``lo < name <= hi`` when the bad elements are exactly those with ``x`` in a range
  (bounds the simplest numbers that separate them from the right ones), else ''."""
  inside, outside = x[bad], x[~bad]
  low, high = float(inside.min()), float(inside.max())
  if np.any((outside >= low) & (outside <= high)):
    return ""
  below, above = outside[outside < low], outside[outside > high]
  parts = []
  if below.size:
    parts.append(f"{_simplest(float(below.max()), low):g} < ")
  parts.append(name)
  if above.size:
    parts.append(f" <= {_simplest(high, float(above.min())):g}")
  return "".join(parts) if below.size or above.size else ""


def _simplest(a: float, b: float) -> float:
  """The number in [a, b) with the fewest significant digits (a < b)."""
  if a <= 0 < b:
    return 0.0
  exponent = int(np.floor(np.log10(max(abs(a), abs(b))))) + 1
  for e in range(exponent, exponent - 17, -1):
    step = 10.0 ** e
    candidate = np.ceil(a / step) * step
    if candidate < b:
      return float(f"{candidate:.15g}")
  return a


def _unknown(c: _Input) -> Diagnosis:
  b, t = c.b[0], c.t[0]
  at = np.unravel_index(int(np.argmax(np.abs(b - t))), b.shape) if b.ndim else ()
  scale = float(np.max(np.abs(t), initial=0.0)) or 1.0
  error = float(np.max(np.abs(b - t))) / scale
  return Diagnosis(
      Kind.UNKNOWN,
      f"the cotangent of {c.name} is not the derivative of the {c.oracle}, and no known mistake "
      f"fits: at {list(map(int, at))} the backward gives {_number(_real(b[at]))}, the true "
      f"value is {_number(_real(t[at]))} (error {error:.2g} of the largest)",
      input=c.name, values={"error": error, "error_map": error_map.error_map(b, t)})


def _ill_conditioned(op: OpDef, c: _Input) -> Diagnosis:
  """A right backward that finite differences cannot confirm: the forward (its return
  line) loses the digits."""
  file, line = source_lines.cotangent_line(source_lines.user_functions(op)[0], None)
  return Diagnosis(
      Kind.ILL_CONDITIONED,
      f"'{op.name}' is ill-conditioned in {c.name} at the sample: relative condition number "
      f"{c.condition:.1e}, so finite differences are good to only {c.noise:.0e} (two step "
      "sizes disagree) and the backward agrees with them that far; each framework loses "
      f"about log10({c.condition:.0e}) digits: sample better conditioned inputs or "
      "reformulate", input=c.name, file=file, line=line,
      values={"condition_number": float(f"{c.condition:.3g}"), "fd_noise": c.noise})


def _combined(op: OpDef, found: list[Diagnosis], wrong: list[_Input]) -> Diagnosis:
  """The first input's diagnosis, located in the backward, naming the others' kinds."""
  first = found[0]
  index = op.input_names.index(first.input)
  file, line = source_lines.cotangent_line(  # Swapped: the return that orders them.
      source_lines.user_functions(op)[1],
      None if first.kind == Kind.SWAPPED_COTANGENTS else index)
  others = [f"{d.input}: {d.kind}" for d in found[1:]]
  values = dict(first.values)
  c = next((c for c in wrong if c.name == first.input), None)
  if "error_map" not in values and c is not None:
    values["error_map"] = error_map.error_map(c.b[0], c.t[0])
  values.setdefault("inputs", {d.input: str(d.kind) for d in found})
  message = (f"backward of '{op.name}': {first.message}"
             + (f" (also wrong: {', '.join(others)})" if others else ""))
  return dataclasses.replace(first, message=message, file=file, line=line, values=values)
