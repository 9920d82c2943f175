"""The Newton / Hessian-vector-product example in its short mode."""

import subprocess
import sys

import pytest

from crossgrad.examples import newton_hvp


def test_short_run_beats_gradient_descent():
  results = newton_hvp.run(steps=3, cg_iterations=20)
  assert results["hvp_error"] < 1e-10  # Forward over reverse = the dense Hessian's product.
  newton, descent = results["newton"], results["gradient_descent"]
  assert newton[0] == descent[0]
  assert all(later < earlier for earlier, later in zip(newton, newton[1:]))
  assert newton[-1] < 0.5 * descent[-1]


def test_through_a_surrogate_crossgrad_keeps_the_straight_through_curvature():
  q = newton_hvp.quantized_least_squares(seed=0)
  assert q["crossgrad_forward_mode"] == "works"
  assert q["crossgrad_hvp_error"] < 1e-12  # H v = X^T X v / n.
  assert q["crossgrad_loss"][1] == pytest.approx(q["optimum"], rel=1e-6)  # One step.
  assert "can't apply forward-mode autodiff" in q["custom_vjp_forward_mode"]
  assert q["custom_vjp_hvp_error"] > 0.1  # Its H v is round's: zero.
  assert q["custom_vjp_loss"][1] > 1.2 * q["optimum"]


def test_command_line_short_mode():
  done = subprocess.run([sys.executable, "-m", "crossgrad.examples.newton_hvp", "--steps=2",
                         "--cg_iterations=10"], capture_output=True, text=True, timeout=300,
                        check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  assert "Newton-CG loss" in done.stdout and "dense jax.hessian" in done.stdout
