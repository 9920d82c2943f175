"""Finite-difference checks of a VJP, in float64 NumPy.

Small inputs get the full Jacobian compared entry by entry, and the backward's VJP for a
random cotangent against the one the unit cotangents' rows make (one-hot cotangents alone
pass a backward not linear in g, such as g * g * f'(x), or one that ignores g); large ones
get the directional dot-product test <J t, c> = <t, J^T c> over a few random directions
(one with c = J t, which makes a scaled or sign-flipped backward stand out), a few
passes over the input whatever its size. Random directions, here and in
every row of the check, are `uniform`.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import numpy as np

Arrays = Sequence[np.ndarray]
FULL_JACOBIAN_LIMIT = 256  # Inputs and outputs up to this many elements.
TOLERANCE = 1e-6
STEP = 1e-6
# What a full-Jacobian check finds about a backward that fails the random cotangent.
NOT_LINEAR = "backward is not linear in the cotangent g"
IGNORES_G = NOT_LINEAR + ": it ignores g"


class Result(NamedTuple):
  """A VJP against finite differences: the relative ``error``, ``how`` it was measured, and
  ``finding``: `NOT_LINEAR` or `IGNORES_G` where the random cotangent shows it, else ''."""

  error: float
  how: str
  finding: str = ""


def uniform(rng: np.random.Generator, shape, dtype=np.float64) -> np.ndarray:
  """Random values uniform on [-1, 1) in ``dtype``: the check's random directions and
  cotangents. Any continuous distribution exposes a wrong derivative with probability one
  (torch's ``gradcheck(fast_mode=True)`` draws uniform vectors too); uniform draws cost a
  fraction of normal ones, which dominated the check of large inputs."""
  u = rng.random(shape)
  u *= 2.0
  u -= 1.0
  return u.astype(dtype, copy=False)


def _flat(arrays: Arrays) -> np.ndarray:
  """The arrays as one vector: a view of a lone array (no copy), else a concatenation."""
  if len(arrays) == 1:
    return np.ravel(arrays[0])
  return np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.zeros(0)


def _unflat(vector: np.ndarray, like: Arrays) -> list[np.ndarray]:
  parts, start = [], 0
  for a in like:
    parts.append(vector[start:start + a.size].reshape(a.shape))
    start += a.size
  return parts


def dot(a: np.ndarray, b: np.ndarray) -> float:
  """The dot product of two real arrays of the same size, in float64 when either is: one
  pass without BLAS (whose threads make a dot tens of times slower on a busy machine)."""
  return float(np.einsum("i,i->", np.ravel(a), np.ravel(b)))


def norm(a: np.ndarray) -> float:
  """The Euclidean norm of a real array (`dot`)."""
  return float(np.sqrt(dot(a, a)))


def _step(inputs: Arrays) -> float:
  scale = max([1.0] + [float(np.sqrt(np.mean(np.square(x)))) for x in inputs if x.size])
  return STEP * scale


def full_jacobian_error(f: Callable[[Arrays], Arrays], vjp: Callable[[Arrays, Arrays], Arrays],
                        inputs: Arrays, rng: np.random.Generator | None = None) -> float:
  """The worse of `_full_jacobian`'s two errors."""
  return _full_jacobian(f, vjp, inputs, rng or np.random.default_rng(0))[0]


def _full_jacobian(f: Callable[[Arrays], Arrays], vjp: Callable[[Arrays, Arrays], Arrays],
                   inputs: Arrays, rng: np.random.Generator) -> tuple[float, str]:
  """The worse of two errors, and what the second found (`Result.finding`).

  Largest entry of |J_fd - J_vjp| (J_vjp's rows: the VJPs of unit cotangents), relative to
  the largest entry of J_vjp (at least 1); and the linearity error: largest entry of
  |B(c) - J_vjp^T c| for a `uniform` cotangent c, relative to that of |J_vjp|^T |c| (at
  least 1). A linear backward makes the second a rounding error; with the first it gives
  B(c) = J_fd^T c, with no forward evaluation more. ``f`` maps the differentiable inputs
  to the floating outputs; ``vjp(inputs, c)`` returns the cotangents of those inputs for
  output cotangents ``c``.
  """
  inputs = [np.asarray(x, np.float64) for x in inputs]
  x0 = _flat(inputs)
  outputs = [np.asarray(o) for o in f(inputs)]
  h = _step(inputs)
  numeric = np.empty((_flat(outputs).size, x0.size))
  for j in range(x0.size):
    e = np.zeros_like(x0)
    e[j] = h
    plus = _flat(f(_unflat(x0 + e, inputs)))
    minus = _flat(f(_unflat(x0 - e, inputs)))
    numeric[:, j] = (plus - minus) / (2 * h)
  analytic = np.empty_like(numeric)
  for i in range(analytic.shape[0]):
    c = np.zeros(analytic.shape[0])
    c[i] = 1.0
    analytic[i] = _flat(vjp(inputs, _unflat(c, outputs)))
  scale = max(1.0, float(np.max(np.abs(analytic), initial=0.0)))
  error = float(np.max(np.abs(numeric - analytic), initial=0.0)) / scale
  c = uniform(rng, analytic.shape[0])
  at_c = _flat(vjp(inputs, _unflat(c, outputs)))
  worst = float(np.max(np.abs(at_c - analytic.T @ c), initial=0.0))
  linearity = worst / max(1.0, float(np.max(np.abs(analytic).T @ np.abs(c), initial=0.0)))
  if not linearity > TOLERANCE:  # NaN claims nothing: the entries' error says it.
    return error, ""
  ignores = np.max(np.abs(at_c - analytic[0])) <= TOLERANCE * scale  # B(c) = B(e_0).
  return max(error, linearity), IGNORES_G if ignores else NOT_LINEAR


def directional_error(f: Callable[[Arrays], Arrays], vjp: Callable[[Arrays, Arrays], Arrays],
                      inputs: Arrays, rng: np.random.Generator, directions: int = 4,
                      outputs: Arrays | None = None) -> float:
  """Worst |<J t, c> - <t, J^T c>| over random t, relative to its Cauchy-Schwarz bound.

  ``vjp`` is called with the same ``inputs`` list every time (a caller may keep one VJP
  for them); ``outputs``: ``f(inputs)`` where the caller has it.
  """
  inputs = [np.asarray(x, np.float64) for x in inputs]
  x0 = _flat(inputs)
  h = _step(inputs)
  outputs = f(inputs) if outputs is None else outputs
  worst = 0.0
  for k in range(directions):
    t = uniform(rng, x0.size)
    step = h * t
    plus = x0 + step
    minus = np.subtract(x0, step, out=step)  # ``step`` is spent: its buffer reused.
    jt = _flat(f(_unflat(plus, inputs))) - _flat(f(_unflat(minus, inputs)))
    del plus, minus, step
    jt /= 2 * h  # A new array: divided in place.
    c = jt if k == directions - 1 else uniform(rng, jt.size)
    jtc = _flat(vjp(inputs, _unflat(c, outputs)))
    norm_jt = norm(jt)
    bound = norm_jt * (norm_jt if c is jt else norm(c)) + norm(t) * norm(jtc)
    if bound == 0.0:
      continue
    worst = max(worst, abs(dot(jt, c) - dot(t, jtc)) / bound)
  return worst


def vjp_error(f: Callable[[Arrays], Arrays], vjp: Callable[[Arrays, Arrays], Arrays],
              inputs: Arrays, rng: np.random.Generator,
              outputs: Arrays | None = None) -> Result:
  """The full-Jacobian check for small problems, the directional one otherwise;
  ``outputs``: ``f(inputs)`` where the caller has it (one forward fewer)."""
  n_in = sum(np.size(x) for x in inputs)
  if outputs is None:
    outputs = f([np.asarray(x, np.float64) for x in inputs])
  n_out = sum(np.size(o) for o in outputs)
  if n_in <= FULL_JACOBIAN_LIMIT and n_out <= FULL_JACOBIAN_LIMIT:
    error, finding = _full_jacobian(f, vjp, inputs, rng)
    return Result(error, f"full Jacobian {n_out}x{n_in}", finding)
  return Result(directional_error(f, vjp, inputs, rng, outputs=outputs),
                f"directional, {n_in} inputs")
