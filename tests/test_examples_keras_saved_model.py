"""The Keras SavedModel example in its short mode: reloaded in a fresh process, the model
still has its custom (straight-through) gradient and fine-tunes."""

import subprocess
import sys

from crossgrad.examples import keras_saved_model


def test_short_run_reloads_with_custom_gradients(tmp_path):
  results = keras_saved_model.run(steps=40, finetune_steps=30, path=str(tmp_path / "model"))
  assert results["train_losses"][-1] < results["train_losses"][0]
  assert results["gradient_error"] < 1e-5  # The fresh process's gradient is the saved one.
  assert results["kernel_gradient_norm"] > 1e-3  # Straight through, not round's zero.
  tuned = results["finetune_losses"]
  assert tuned[-1] < 0.9 * tuned[0]


def test_command_line_short_mode(tmp_path):
  done = subprocess.run([sys.executable, "-m", "crossgrad.examples.keras_saved_model",
                         "--steps=5", "--finetune_steps=3", f"--path={tmp_path / 'model'}"],
                        capture_output=True, text=True, timeout=600, check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  assert "fresh process" in done.stdout and "fine-tuning on shifted data" in done.stdout
