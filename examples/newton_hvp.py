r"""Newton steps through crossgrad ops in JAX, with Hessian-vector products.

1. A one-hidden-layer regression net whose activation is crossgrad's ``leaky_relu`` is
   fitted by damped Newton-CG: each step solves ``(H + lambda I) d = -g`` by conjugate
   gradients (stopping at negative curvature), where ``H v`` is computed forward over
   reverse, ``jax.jvp(jax.grad(loss), (w,), (v,))``, and checked against the dense
   `jax.hessian`; against gradient descent for the same number of steps.
2. Through a surrogate gradient: a least-squares fit whose weights are quantised by
   ``ste_quantize`` (rounded forward, straight-through backward). A crossgrad op's
   forward mode is the transpose of its backward at every order, so its ``H v`` is the
   straight-through curvature ``X^T X v / n`` and one Newton step lands on the quantised
   least-squares solution. The same definition as a plain `jax.custom_vjp` has no forward
   mode (`jax.jvp` raises), and its forward-over-reverse ``H v`` differentiates the
   rounding instead: zero, so its Newton-CG step degenerates to a gradient step.

  python -m crossgrad.examples.newton_hvp --steps=8 --cg_iterations=30
"""

from __future__ import annotations

from typing import Callable

from absl import flags
import numpy as np

from crossgrad.cli import usage

FLAGS = flags.FLAGS


def define_flags():
  """The binary's flags (defined when run, so that importing this module defines none)."""
  flags.DEFINE_integer("steps", 8, "Newton steps (and gradient-descent steps).")
  flags.DEFINE_integer("cg_iterations", 30, "Conjugate-gradient iterations per Newton step.")
  flags.DEFINE_integer("seed", 0, "Seed for data and initial weights.")

N, N_IN, HIDDEN = 256, 3, 12
LEARNING_RATE = 0.1  # Gradient descent's.


def make_problem(seed: int):
  """Data from a teacher net and a student's initial weights (float64)."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((N, N_IN))
  teacher = rng.standard_normal((N_IN, HIDDEN)), rng.standard_normal((HIDDEN, 1))
  y = np.maximum(x @ teacher[0], 0.2 * (x @ teacher[0])) @ teacher[1] / np.sqrt(HIDDEN)
  y += 0.05 * rng.standard_normal(y.shape)
  weights = {"w1": rng.standard_normal((N_IN, HIDDEN)) / np.sqrt(N_IN),
             "b1": np.zeros(HIDDEN), "w2": rng.standard_normal((HIDDEN, 1)) / np.sqrt(HIDDEN)}
  return jnp.asarray(x), jnp.asarray(y), {k: jnp.asarray(v) for k, v in weights.items()}


def make_loss(x, y) -> Callable:
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  leaky_relu = cg.jax.get("leaky_relu")

  def loss(w):
    prediction = leaky_relu(x @ w["w1"] + w["b1"]) @ w["w2"]
    return 0.5 * jnp.mean(jnp.square(prediction - y))
  return loss


def hvp(loss: Callable, w, v):
  """H v, forward over reverse: the directional derivative of the gradient."""
  import jax  # pylint: disable=g-import-not-at-top
  return jax.jvp(jax.grad(loss), (w,), (v,))[1]


def conjugate_gradient(matvec: Callable, b, iterations: int):
  """Approximately solves ``matvec(d) = b`` (flat vectors), stopping at negative curvature
  (Steihaug): the Hessian of a non-convex loss need not be positive definite."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  d, r = jnp.zeros_like(b), b
  p, rr = r, r @ r
  for _ in range(iterations):
    ap = matvec(p)
    curvature = p @ ap
    if curvature <= 0:
      return d if d.any() else b  # Downhill along b (here -gradient) if nothing better.
    alpha = rr / curvature
    d, r = d + alpha * p, r - alpha * ap
    rr_next = r @ r
    if rr_next < 1e-20 * (b @ b):
      break
    p, rr = r + (rr_next / rr) * p, rr_next
  return d


def newton(loss: Callable, w, steps: int, cg_iterations: int, damping: float = 1e-2):
  """Damped Newton-CG: a step is kept only if it lowers the loss (else more damping)."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax.flatten_util import ravel_pytree  # pylint: disable=g-import-not-at-top
  value_and_grad = jax.jit(jax.value_and_grad(loss))
  product = jax.jit(lambda w, v: hvp(loss, w, v))
  losses = [float(loss(w))]
  for _ in range(steps):
    _, grad = value_and_grad(w)
    flat_grad, unravel = ravel_pytree(grad)
    while True:
      matvec = lambda v: ravel_pytree(product(w, unravel(v)))[0] + damping * v  # pylint: disable=cell-var-from-loop
      step = conjugate_gradient(matvec, -flat_grad, cg_iterations)
      candidate = jax.tree.map(lambda a, b: a + b, w, unravel(step))
      value = float(loss(candidate))
      if value < losses[-1]:
        w, damping = candidate, damping / 3
        break
      damping *= 10
    losses.append(value)
  return w, losses


def gradient_descent(loss: Callable, w, steps: int):
  import jax  # pylint: disable=g-import-not-at-top
  grad = jax.jit(jax.grad(loss))
  losses = [float(loss(w))]
  for _ in range(steps):
    w = jax.tree.map(lambda a, g: a - LEARNING_RATE * g, w, grad(w))
    losses.append(float(loss(w)))
  return losses


def hvp_error(loss: Callable, w, seed: int) -> float:
  """Max relative difference between the forward-over-reverse H v and the dense Hessian's."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax.flatten_util import ravel_pytree  # pylint: disable=g-import-not-at-top
  flat, unravel = ravel_pytree(w)
  v = np.random.default_rng(seed).standard_normal(flat.shape)
  dense = jax.jit(jax.hessian(lambda f: loss(unravel(f))))(flat) @ v
  fast = ravel_pytree(jax.jit(hvp, static_argnums=0)(loss, w, unravel(v)))[0]
  return float(np.max(np.abs(fast - dense)) / np.max(np.abs(dense)))


QUANTIZE = {"bits": 8, "scale": 1.0 / 64}  # Levels k / 64 in [-2, 2).


def _as_custom_vjp(op, params: dict):
  """The op's forward and backward (in the JAX backend's ``xp``) as a plain `jax.custom_vjp`,
  as one writes it without crossgrad."""
  import jax  # pylint: disable=g-import-not-at-top
  from crossgrad.backends import jax as backend  # pylint: disable=g-import-not-at-top

  @jax.custom_vjp
  def fn(x):
    return op.forward(backend.xp, x, **params)[0]

  fn.defvjp(lambda x: op.forward(backend.xp, x, **params),
            lambda residuals, g: tuple(op.backward(backend.xp, residuals, g, **params)))
  return fn


def quantized_least_squares(seed: int) -> dict:
  """One Newton step on ``0.5 mean((x Q(w) - y)^2)``, ``Q`` the straight-through quantiser,
  with crossgrad's op and with the same definition as a plain `jax.custom_vjp`."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import crossgrad as cg  # pylint: disable=g-import-not-at-top
  with jax.enable_x64(True):
    rng = np.random.default_rng(seed + 1)
    x = jnp.asarray(rng.standard_normal((N, N_IN)))
    y = x @ jnp.asarray(rng.uniform(-1.5, 1.5, N_IN)) + 0.1 * rng.standard_normal(N)
    w = jnp.zeros(N_IN)
    op = cg.get("ste_quantize")
    best = np.linalg.lstsq(np.asarray(x), np.asarray(y), rcond=None)[0]
    results = {"optimum": float(0.5 * np.mean((np.asarray(x) @ (
        np.round(best * 64) / 64) - np.asarray(y)) ** 2))}
    for name, quantize in (("crossgrad", cg.jax.get(op, **QUANTIZE)),
                           ("custom_vjp", _as_custom_vjp(op, op.resolve_params(QUANTIZE)))):
      loss = lambda w, q=quantize: 0.5 * jnp.mean(jnp.square(x @ q(w) - y))
      grad = jax.grad(loss)(w)
      matvec = jax.jit(lambda v, loss=loss: hvp(loss, w, v))
      try:
        jax.jvp(loss, (w,), (w,))
        results[f"{name}_forward_mode"] = "works"
      except TypeError as e:
        results[f"{name}_forward_mode"] = str(e).splitlines()[0]
      probe = jnp.ones(N_IN)
      results[f"{name}_hvp_error"] = float(jnp.max(jnp.abs(
          matvec(probe) - x.T @ (x @ probe) / N)))
      step = conjugate_gradient(matvec, -grad, 2 * N_IN)
      results[f"{name}_loss"] = (float(loss(w)), float(loss(w + step)))
  return results


def run(steps: int = 8, cg_iterations: int = 30, seed: int = 0) -> dict:
  import jax  # pylint: disable=g-import-not-at-top
  with jax.enable_x64(True):
    x, y, w0 = make_problem(seed)
    loss = make_loss(x, y)
    _, newton_losses = newton(loss, w0, steps, cg_iterations)
    return {"hvp_error": hvp_error(loss, w0, seed), "newton": newton_losses,
            "gradient_descent": gradient_descent(loss, w0, steps),
            "quantized": quantized_least_squares(seed)}


def main(argv):
  del argv
  results = run(FLAGS.steps, FLAGS.cg_iterations, FLAGS.seed)
  print(f"H v forward over reverse vs the dense jax.hessian: max relative error "
        f"{results['hvp_error']:.1e}")
  print("step  Newton-CG loss  gradient-descent loss")
  for k, (a, b) in enumerate(zip(results["newton"], results["gradient_descent"])):
    print(f"{k:4d}  {a:14.6f}  {b:21.6f}")
  q = results["quantized"]
  print(f"quantised least squares (optimum {q['optimum']:.6f}), one Newton step:")
  for name in ("crossgrad", "custom_vjp"):
    before, after = q[f"{name}_loss"]
    print(f"  {name:10s}: loss {before:.6f} -> {after:.6f}; H v vs X^T X v / n: "
          f"max error {q[f'{name}_hvp_error']:.2e}; jax.jvp: {q[f'{name}_forward_mode']}")


if __name__ == "__main__":
  define_flags()
  usage.run(main)
