"""Cross-check rows beyond first-order reverse mode.

For one op, parameter set and dtype (a `OpCase`), in every backend, device and mode:

* ``jvp``: the backend's forward-mode tangent (`evaluate_higher_order`) for random tangents
  against finite differences of the forward, or of the surrogate, input by input as the
  first-order ``fd`` rows decide; the inputs of a surrogate op that has no surrogate
  (``custom_add``, ``center_loss``'s centers) against the transpose of the reference
  backward, which is what forward mode must compute for them.
* ``second_order``: the gradient of <vjp(g), v> with respect to the inputs (same call;
  g the shared cotangent, v a random direction) against finite
  differences of the reference backward; skipped where the op declares
  ``backward_not_differentiable``.
* ``round_trip``: in an export mode (`EXTRA_MODES`, run only when asked for), the outputs
  and cotangents against the same backend's eager ones.
* transformation modes (`TRANSFORMS`: JAX ``vmap``, ``scan``, ``checkpoint``; TF
  ``vectorized_map``): ``forward`` and ``vjp`` rows of a batch of two samples against the
  reference looped over the batch; ``batched_vjp`` (JAX, torch): the VJP at the sample of
  `COTANGENTS` random cotangents at once (``vmap`` of one VJP function) against the
  reference's VJP looped over them.

Finite differences run in float64 NumPy at the dtype's (rounded) inputs; their rows pass
when the error, relative to the largest expected entry (at least 1, as the ``fd`` rows),
is within the dtype's tolerance or `finite_diff.TOLERANCE`, whichever is larger. A backend
without one of these members, declaring a check unsupported in a mode
(``UNSUPPORTED_CHECKS``) or raising `NotImplementedError`, gets a ``skipped`` row saying why.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import zlib
from typing import Any, Callable, Sequence

import numpy as np

from crossgrad.backends.common import base
from crossgrad.checker import compare, finite_diff, round_trips
from crossgrad.checker.report import Check, Row, RowContext, first_line
from crossgrad.registry import validation
from crossgrad.registry.opdef import OpDef

CHECKS = (Check.JVP, Check.SECOND_ORDER)  # The checks of one `evaluate_higher_order` call.
DUAL_LIMIT = 4096  # Outputs up to this many elements get the transposed backward in full.
SECOND_ORDER_FULL_LIMIT = 2048  # Inputs up to this many elements: second order in full.
DIRECTIONS = 4  # Random directions of a dot-product test, beyond those limits.
BATCH = 2  # Examples in a transformation mode's batch.
COTANGENTS = 3  # Output cotangents the batched_vjp mode pulls back at one sample.


def modes_of(module: Any, modes: Sequence[str] | None) -> list[str]:
  """The backend's modes to run: its `MODES` by default, asked-for ones (export round trips
  in `EXTRA_MODES` only so) otherwise."""
  if modes is None:
    return list(module.MODES)
  known = tuple(module.MODES) + round_trips.capabilities(module).EXTRA_MODES
  return [m for m in modes if m in known]


def transforms_of(module: Any, modes: Sequence[str] | None) -> list[str]:
  """The backend's transformation modes to run: its `TRANSFORMS` by default, asked-for ones
  (`EXTRA_TRANSFORMS` only so) otherwise."""
  optional = round_trips.capabilities(module)
  if modes is None:
    return list(optional.TRANSFORMS)
  return [m for m in modes if m in optional.TRANSFORMS + optional.EXTRA_TRANSFORMS]


@dataclasses.dataclass
class OpCase:
  """One op, parameter set and dtype, and what its rows compare with.

  ``compare(actual, expected, names, whole_vector=False) -> (error, note)`` is the
  engine's comparison of arrays with the reference (dtype, shape, values; `compare.compare`).
  """

  op: OpDef
  params: dict
  label: str
  dtype: str
  inputs: list[np.ndarray]
  cotangent: list[np.ndarray | None]
  tolerance: float
  compare: Callable[..., tuple[float, str]]
  seed: int = 0
  second: list[np.ndarray] | None = None  # Another sample: the batch's second example.
  # The NumPy reference at ``inputs``, where the caller has it: outputs (a tuple), VJP
  # function, and input cotangents for ``cotangent``. Rows reuse it instead of running it.
  reference: tuple[tuple, Callable[..., Any], Sequence[Any]] | None = None

  def row(self, backend: str, device: str, mode: str, check: Check, error: float | None,
          ok: bool, note: str = "", seconds: float = 0.0, tolerance: float | None = None):
    context = RowContext(self.op.name, self.label, backend, device, self.dtype, mode)
    return context.row(check, error, self.tolerance if tolerance is None else tolerance, ok,
                       note, seconds)

  def rng(self, purpose: str) -> np.random.Generator:
    return np.random.default_rng([self.seed, zlib.crc32(f"{self.dtype} {purpose}".encode())])

  @functools.cached_property
  def tangents(self) -> list[np.ndarray | None]:
    """Random input tangents for the jvp rows (None for inputs with no gradient)."""
    return _directions(self.op, self.inputs, self.rng("tangents"))

  @functools.cached_property
  def direction(self) -> list[np.ndarray | None]:
    """The random direction v of the second-order rows."""
    return _directions(self.op, self.inputs, self.rng("direction"))

  @functools.cached_property
  def jvp_reference(self) -> "Reference":
    return reference_jvp(self.op, self.params, self.inputs, self.tangents,
                         self.rng("jvp directions"),
                         None if self.reference is None else self.reference[0])

  @functools.cached_property
  def second_order_reference(self) -> "Reference":
    return reference_second_order(self.op, self.params, self.inputs, self.cotangent,
                                  self.direction, self.rng("second-order directions"))

  @functools.cached_property
  def batch_reference(self) -> "Batch":
    """The transformation modes' batch (`batch_of`), its cotangent (the first example's is
    ``cotangent``, the second's random), and the reference's outputs and cotangents looped
    over it: computed once, shared by every backend; the first example's, and the forward
    of a second example that is the first again, are ``reference``'s where it is given."""
    numpy_backend = base.load("numpy")
    examples = [self.inputs, second_example(self.inputs, self.second)]
    first = self.reference or (*numpy_backend.vjp(self.op, *self.inputs, **self.params),
                               None)
    rng = self.rng("batch")
    outputs, cotangents, expected = [], [], []
    for b, example in enumerate(examples):
      out, vjp_fn, cts = (first if example is self.inputs
                          else (*numpy_backend.vjp(self.op, *example, **self.params), None))
      outs = validation.as_tuple(out)
      cot = list(self.cotangent) if b == 0 else [
          finite_diff.uniform(rng, o.shape, o.dtype) if compare.is_floating(o.dtype) else None
          for o in outs]
      if b or cts is None:
        cts = vjp_fn(tuple(cot) if isinstance(out, tuple) else cot[0])
      outputs.append(outs)
      cotangents.append(cot)
      expected.append(cts)

    def stack(per_example):
      return [None if parts[0] is None else np.stack(parts) for parts in zip(*per_example)]

    return Batch([np.stack([x, y]) for x, y in zip(*examples)], stack(cotangents),
                 stack(outputs), stack(expected))

  @functools.cached_property
  def cotangents_reference(self) -> "Batch":
    """The batched_vjp mode's `COTANGENTS` random output cotangents (stacked on axis 0)
    at ``inputs``, the outputs there and the reference's input cotangents of each."""
    outs, vjp_fn, _ = self.reference or (
        *base.load("numpy").vjp(self.op, *self.inputs, **self.params), None)
    tupled = isinstance(outs, tuple)
    outs = validation.as_tuple(outs)
    rng = self.rng("batched cotangents")
    cots = [[finite_diff.uniform(rng, o.shape, o.dtype) if compare.is_floating(o.dtype)
             else None for o in outs] for _ in range(COTANGENTS)]
    expected = [vjp_fn(tuple(c) if tupled else c[0]) for c in cots]

    def stack(per_cotangent):
      return [None if parts[0] is None else np.stack(parts) for parts in zip(*per_cotangent)]
    return Batch(list(self.inputs), stack(cots), list(outs), stack(expected))

  @property
  def fd_tolerance(self) -> float:
    return max(self.tolerance, finite_diff.TOLERANCE)


@dataclasses.dataclass(frozen=True)
class Batch:
  """A transformation mode's batch (axis 0: the examples): inputs and output cotangent,
  and the reference's outputs and input cotangents looped over it."""

  inputs: list[np.ndarray]
  cotangent: list[np.ndarray | None]
  outputs: list[np.ndarray | None]
  cotangents: list[np.ndarray | None]


def _directions(op: OpDef, inputs, rng) -> list[np.ndarray | None]:
  return [finite_diff.uniform(rng, x.shape, x.dtype) if i in op.diff_argnums else None
          for i, x in enumerate(inputs)]


def _wide(arrays) -> list[np.ndarray | None]:
  return [None if a is None else np.asarray(a, np.float64)
          if compare.is_floating(np.asarray(a).dtype) else np.asarray(a) for a in arrays]


def _floating(outputs) -> list[np.ndarray]:
  return [np.asarray(o, np.float64) for o in validation.as_tuple(outputs)
          if compare.is_floating(np.asarray(o).dtype)]


def _step(arrays) -> float:
  scale = max([1.0] + [float(np.sqrt(np.mean(np.square(a)))) for a in arrays if a.size])
  return finite_diff.STEP * scale


def _dot(a: Sequence[np.ndarray | None], b: Sequence[np.ndarray | None]) -> float:
  return sum(finite_diff.dot(x, y) for x, y in zip(a, b) if x is not None and y is not None)


def _norm(a: Sequence[np.ndarray | None]) -> float:
  return float(np.sqrt(sum(finite_diff.dot(x, x) for x in a if x is not None)))


@dataclasses.dataclass
class Reference:
  """What a backend's arrays must be: ``expected`` (float64, None where nothing is due);
  or, where that is too large to know in full, ``expected`` holds the part known in full
  and ``dual(c)`` says what <c, actual - expected> must be for a direction ``c``: tested
  along ``directions`` (random) and along ``actual - expected`` itself, which makes a
  scaled or sign-flipped result stand out."""

  expected: list[np.ndarray | None]
  dual: Callable[[list[np.ndarray | None]], float] | None = None
  directions: list[list[np.ndarray | None]] = dataclasses.field(default_factory=list)
  how: str = ""

  @functools.cached_property
  def _along_directions(self) -> list[tuple[list[np.ndarray | None], float, float]]:
    """Each random direction, ``dual`` along it and its norm: the same for every row."""
    return [(c, self.dual(c), _norm(c)) for c in self.directions]

  def error(self, actual: Sequence[Any], dtypes: Sequence[str],
            names: Sequence[str]) -> tuple[float, str]:
    """The worst error: relative to the largest expected entry (at least 1) in full,
    relative to the Cauchy-Schwarz bound in a dot-product test; infinite on a missing
    array or a dtype or shape mismatch."""
    worst, note = 0.0, ""
    for name, a, e, dtype in zip(names, actual, self.expected, dtypes):
      if e is None:
        continue
      if a is None:
        return float("inf"), f"{name}: missing"
      a = np.asarray(a)
      if a.dtype.name != dtype or a.shape != e.shape:
        return float("inf"), (f"{name}: {a.dtype.name}{list(a.shape)}, "
                              f"want {dtype}{list(e.shape)}")
      diff = a.astype(np.float64)  # A copy, made |a - e| in place.
      np.subtract(diff, e, out=diff)
      largest = float(np.max(np.abs(diff, out=diff), initial=0.0))  # NaN where any is.
      if np.isnan(largest):
        return float("inf"), f"{name}: NaN"
      err = largest / max(1.0, float(np.max(e, initial=0.0)), -float(np.min(e, initial=0.0)))
      if self.dual is None and (err > worst or not note):
        worst, note = err, f"worst: {name}"
    if self.dual is not None:
      rest = [None if e is None else np.asarray(a, np.float64) - e
              for a, e in zip(actual, self.expected)]
      along_rest = (rest, self.dual(rest), _norm(rest))
      for c, value, norm in self._along_directions + [along_rest]:
        got = _dot(c, rest)
        bound = max(norm * along_rest[2], abs(value), np.finfo(np.float64).tiny)
        worst = max(worst, abs(got - value) / bound)
      note = f"{self.how}, {len(self.directions) + 1} directions"
    return worst, note


def reference_jvp(op: OpDef, params: dict, inputs, tangents, rng,
                  outputs: Any = None) -> Reference:
  """The forward-mode tangents each backend must compute, one per output (None for integer
  outputs): central differences of the forward for exact inputs, of the surrogate for a
  surrogate op's other inputs, and the transposed reference backward where a surrogate op
  declares no surrogate (in full from the VJPs of the output basis, or by dot products
  with random output cotangents where the outputs are too large). ``outputs``: the op's
  outputs at ``inputs`` where the caller has them (only their shapes and dtypes count)."""
  reference = base.load("numpy")
  x, t = _wide(inputs), _wide(tangents)
  outputs = validation.as_tuple(reference.get(op, **params)(*x) if outputs is None
                                else outputs)
  total = [np.zeros(np.shape(o)) for o in outputs if compare.is_floating(np.asarray(o).dtype)]

  def forward(xp, *args, **kw):
    return op.forward(xp, *args, **kw)[0]

  exact = op.diff_argnums if op.gradient == "exact" else op.exact_argnums
  rest = [i for i in op.diff_argnums if i not in exact]
  groups = [(forward, exact)]
  if op.surrogate is not None:
    groups, rest = groups + [(op.surrogate, rest)], []
  for function, argnums in groups:
    if not argnums:
      continue
    h = _step([x[i] for i in argnums])

    def moved(sign, argnums=argnums, h=h):
      args = [a + sign * h * t[i] if i in argnums else a for i, a in enumerate(x)]
      return _floating(function(reference.xp, *args, **params))

    for k, (plus, minus) in enumerate(zip(moved(1), moved(-1))):
      total[k] += (plus - minus) / (2 * h)

  def per_output(arrays):
    it = iter(arrays)
    return [next(it) if compare.is_floating(np.asarray(o).dtype) else None
            for o in outputs]

  if not rest:
    return Reference(per_output(total))
  raw, vjp_fn = reference.vjp(op, *x, **params)

  def transposed(c):  # <c, J_rest t_rest> = <J_rest^T c, t_rest>
    cts = vjp_fn(tuple(c) if isinstance(raw, tuple) else c[0])
    return _dot([cts[i] for i in rest], [t[i] for i in rest])

  shapes = per_output(total)
  if sum(a.size for a in total) > DUAL_LIMIT:
    directions = [[None if a is None else finite_diff.uniform(rng, a.shape) for a in shapes]
                  for _ in range(DIRECTIONS)]
    return Reference(shapes, transposed, directions, "transposed backward by dot products")
  for k, a in enumerate(shapes):
    for j in range(0 if a is None else a.size):
      c = [None if b is None else np.zeros(b.shape) for b in shapes]
      c[k].flat[j] = 1.0
      a.flat[j] += transposed(c)
  return Reference(shapes)


def reference_second_order(op: OpDef, params: dict, inputs, cotangent, direction,
                           rng) -> Reference:
  """Central differences of <vjp(cotangent), direction> with the reference backward: its
  gradient with respect to each input (None where it has none) element by element; where
  the inputs are too large for that, by dot products with random directions, or, for an
  exact op, in full from the backward moved along the direction (`_hessian_vector`)."""
  reference = base.load("numpy")
  x, g, v = _wide(inputs), _wide(cotangent), _wide(direction)
  diff = op.diff_argnums

  def backward(args):
    outputs, vjp_fn = reference.vjp(op, *args, **params)
    return vjp_fn(tuple(g) if isinstance(outputs, tuple) else g[0])

  def phi(args):
    cts = backward(args)
    return _dot([cts[i] for i in diff], [v[i] for i in diff])

  h = _step([x[i] for i in diff])

  def moved(t, sign):
    return [a if s is None else a + sign * h * s for a, s in zip(x, t)]

  def along(t):
    return (phi(moved(t, 1)) - phi(moved(t, -1))) / (2 * h)

  expected: list[np.ndarray | None] = [
      np.zeros(x[i].shape) if i in diff else None for i in range(len(x))]
  if sum(x[i].size for i in diff) > SECOND_ORDER_FULL_LIMIT:
    if op.gradient == "exact":
      return _hessian_vector(backward(moved(v, 1)), backward(moved(v, -1)), diff, h, expected)
    directions = [[None if a is None else finite_diff.uniform(rng, a.shape) for a in expected]
                  for _ in range(DIRECTIONS)]
    return Reference(expected, along, directions, "directional finite differences")
  for i in diff:
    for j in range(x[i].size):
      t = [None if a is None else np.zeros(a.shape) for a in expected]
      t[i].flat[j] = 1.0
      expected[i].flat[j] = along(t)
  return Reference(expected)


def _hessian_vector(plus, minus, diff, h: float, expected) -> Reference:
  """The gradient of <vjp(g), v> from the backward at x + h v and x - h v (``plus``,
  ``minus``): for an exact op the backward's Jacobian is sum_j g_j Hess(f_j), symmetric, so
  the derivative of vjp(g) along v is that gradient, every element from two backwards."""
  for i in diff:
    expected[i] = (np.asarray(plus[i], np.float64) - np.asarray(minus[i], np.float64)) / (2 * h)
  return Reference(expected, how="Hessian-vector product by central differences")


def _skip(case: OpCase, backend: str, device: str, mode: str, check: Check, reason: str) -> Row:
  return dataclasses.replace(case.row(backend, device, mode, Check.SKIPPED, None, True,
                                      f"{check}: {reason}"), tolerance=None)


@dataclasses.dataclass(frozen=True)
class _Attempt:
  """One call of a backend: its ``value``, or why it has none (``skipped``: the backend
  does not implement it; ``error``: it raised), and how long it took."""

  value: Any = None
  seconds: float = 0.0
  skipped: str | None = None
  error: str | None = None

  @property
  def failed(self) -> bool:
    return self.skipped is not None or self.error is not None

  def failure(self, case: OpCase, backend: str, device: str, mode: str, check: Check) -> Row:
    """The row of ``check`` that this failed attempt leaves."""
    if self.skipped is not None:
      return _skip(case, backend, device, mode, check, self.skipped)
    return case.row(backend, device, mode, check, None, False, self.error, self.seconds)


def _attempt(call: Callable[[], Any]) -> _Attempt:
  started = time.perf_counter()
  try:
    return _Attempt(call(), time.perf_counter() - started)
  except NotImplementedError as e:
    return _Attempt(skipped=str(e) or "not implemented")
  except Exception as e:  # pylint: disable=broad-except
    return _Attempt(seconds=time.perf_counter() - started, error=first_line(e))


def mode_rows(case: OpCase, backend: str, module: Any, device: str, mode: str,
              results: tuple) -> list[Row]:
  """``jvp`` and ``second_order`` rows of one backend, device and mode (one call of the
  backend's `evaluate_higher_order`); ``results``: its `evaluate`'s there."""
  op = case.op
  rows = []
  optional = round_trips.capabilities(module)
  unsupported = optional.UNSUPPORTED_CHECKS
  reasons = {}
  for kind in CHECKS:
    if optional.evaluate_higher_order is None:
      reasons[kind] = f"{backend} has no evaluate_higher_order"
    elif (kind, mode) in unsupported:
      reasons[kind] = unsupported[(kind, mode)]
    elif f"{backend}:{kind}" in op.unsupported_modes:
      reasons[kind] = op.unsupported_modes[f"{backend}:{kind}"]
  if op.backward_not_differentiable and Check.SECOND_ORDER not in reasons:
    reasons[Check.SECOND_ORDER] = f"backward not differentiable: {op.backward_not_differentiable}"
  wanted = [kind for kind in CHECKS if kind not in reasons]
  got = _Attempt((None, None))
  if wanted:
    got = _attempt(lambda: module.evaluate_higher_order(
        op, case.params, case.inputs, case.cotangent,
        case.tangents if Check.JVP in wanted else None,
        case.direction if Check.SECOND_ORDER in wanted else None, device=device, mode=mode))
  for k, kind in enumerate(CHECKS):
    if kind in reasons:
      rows.append(_skip(case, backend, device, mode, kind, reasons[kind]))
    elif got.failed:
      rows.append(got.failure(case, backend, device, mode, kind))
    else:
      if kind == Check.JVP:
        reference = case.jvp_reference
        names = [f"output {j} tangent" for j in range(len(reference.expected))]
        # A tangent has its output's dtype (a cast's is not the inputs').
        dtypes = ([np.asarray(o).dtype.name for o in results[0]] if results and results[0]
                  else [case.dtype] * len(names))
        err, note = reference.error(got.value[k], dtypes, names)
      else:
        names = [f"d<vjp, v>/d{n}" for n in op.input_names]
        dtypes = [np.asarray(x).dtype.name for x in case.inputs]
        err, note = case.second_order_reference.error(got.value[k], dtypes, names)
      ok = err <= case.fd_tolerance
      rows.append(case.row(backend, device, mode, kind, err, ok, "" if ok else note,
                           got.seconds / len(wanted), case.fd_tolerance))
  return rows


def round_trip_row(case: OpCase, backend: str, module: Any, device: str, mode: str,
                   eager: tuple | None, results: tuple) -> Row:
  """An export mode's outputs and cotangents (``results``) against ``eager`` (the backend's
  eager ones; computed here if None)."""
  if eager is None:
    eager = module.evaluate(case.op, case.params, case.inputs, case.cotangent, device=device,
                            mode=module.MODES[0])
  names = ([f"output {k}" for k in range(len(eager[0]))]
           + [f"d{n}" for n in case.op.input_names])
  expected = [*eager[0], *eager[1]]
  actual = compare.narrowing_undone(round_trips.narrows_integers(module, mode),
                                    [*results[0], *results[1]], expected)
  n = len(eager[0])  # The outputs, then the cotangents: one vector, as a vjp row's.
  err, note = max(case.compare(actual[:n], expected[:n], names[:n]),
                  case.compare(actual[n:], expected[n:], names[n:], whole_vector=True),
                  key=lambda found: found[0])
  return case.row(backend, device, mode, Check.ROUND_TRIP, err, err <= case.tolerance,
                  f"vs {module.MODES[0]}: " + ("bitwise equal" if err == 0 else note))


def second_example(inputs: Sequence[np.ndarray],
                   second: Sequence[np.ndarray] | None) -> Sequence[np.ndarray]:
  """The transformation modes' batch is ``inputs`` and this second example: ``second``
  (another sample) where it has the same shapes and dtypes as ``inputs``, else ``inputs``."""
  if second is None or [(x.shape, x.dtype) for x in inputs] != [
      (y.shape, y.dtype) for y in second]:
    return inputs
  return second


def evaluate_transforms(case: OpCase, module: Any, device: str, transforms: Sequence[str],
                        op: OpDef | None = None) -> dict:
  """The backend's `evaluate_transformed` of ``op`` (the case's where None) on the case's
  batch, for ``transforms``: transform -> (outputs, cotangents)."""
  batch = case.batch_reference
  more = ({"cotangents": case.cotangents_reference.cotangent} if "batched_vjp" in transforms
          else {})
  return module.evaluate_transformed(case.op if op is None else op, case.params,
                                     batch.inputs, batch.cotangent, device=device,
                                     transforms=list(transforms), **more)


def transform_rows(case: OpCase, backend: str, module: Any, device: str,
                   transforms) -> tuple[list[Row], dict]:
  """``forward`` and ``vjp`` rows of each transformation mode: a batch against the reference
  looped over it (``batched_vjp``: the sample's outputs, and its VJP of a batch of
  cotangents against the reference's looped over them); and what each mode that ran
  returned (transform -> outputs, cotangents)."""
  op = case.op
  rows = []
  batch = case.batch_reference
  skipped = {t: op.unsupported_modes[f"{backend}:{t}"] for t in transforms
             if f"{backend}:{t}" in op.unsupported_modes}
  running = [t for t in transforms if t not in skipped]

  def evaluate(chosen):
    return evaluate_transforms(case, module, device, chosen)

  together = _attempt(lambda: evaluate(running)) if running else _Attempt({})
  if together.failed:  # One program for all failed: run each alone to say which.
    got = {t: _attempt(lambda t=t: evaluate([t])[t]) for t in running}
    seconds = 0.0
  else:
    got = {t: _Attempt(together.value[t]) for t in running}
    seconds = together.seconds / max(1, len(running))
  for transform in transforms:
    if transform in skipped:
      rows.append(case.row(backend, device, transform, Check.SKIPPED, None, True,
                           f"unsupported by the op: {skipped[transform]}"))
      continue
    attempt = got[transform]
    if attempt.failed:
      rows.extend(attempt.failure(case, backend, device, transform, check)
                  for check in ((Check.FORWARD,) if attempt.skipped is not None
                                else (Check.FORWARD, Check.VJP)))
      continue
    result = attempt.value
    narrowed = round_trips.narrows_integers(module, transform)
    expected = case.cotangents_reference if transform == "batched_vjp" else batch
    for check, actual, want, names in (
        (Check.FORWARD, result[0], expected.outputs,
         [f"output {k}" for k in range(len(expected.outputs))]),
        (Check.VJP, result[1], expected.cotangents, [f"d{n}" for n in op.input_names])):
      err, note = case.compare(compare.narrowing_undone(narrowed, actual, want), want, names,
                               whole_vector=check == Check.VJP)
      ok = err <= case.tolerance
      rows.append(case.row(backend, device, transform, check, err, ok, "" if ok else note,
                           seconds))
  return rows, {t: got[t].value for t in running if not got[t].failed}
