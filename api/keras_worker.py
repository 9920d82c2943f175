"""A worker process for the cross-check's ``keras`` rows: runs ops through `crossgrad.keras`
under the Keras backend it was started with (``KERAS_BACKEND``) and that backend's autodiff.

It reads pickled requests ``(op, params, inputs, cotangent)`` on stdin and answers each with
``("ok", outputs, cotangents)`` or ``("error", message)`` on its original stdout (framework
messages go to stderr). ``CROSSGRAD_MODULES`` (os.pathsep-separated) names modules to import
first, to register user ops. Started by `crossgrad.checker.keras_rows`.
"""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np


def _vjp(backend: str, fn, inputs, diff, cotangent):
  """Outputs (a tuple) and the cotangents of the inputs at ``diff`` for ``cotangent`` (one
  entry per output, None for integer outputs), by the backend's own autodiff."""
  if backend == "jax":
    import jax  # pylint: disable=g-import-not-at-top

    def of_diff(*moved):
      full = list(inputs)
      for i, x in zip(diff, moved):
        full[i] = x
      out = fn(*full)
      return out if isinstance(out, tuple) else (out,)
    outs, vjp = jax.vjp(of_diff, *[inputs[i] for i in diff])
    cts = tuple(np.zeros(o.shape, jax.dtypes.float0) if g is None else g
                for o, g in zip(outs, cotangent))
    return outs, vjp(cts)
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    xs = [tf.constant(x) for x in inputs]
    with tf.GradientTape() as tape:
      tape.watch([xs[i] for i in diff])
      out = fn(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    pairs = [(o, g) for o, g in zip(outs, cotangent) if g is not None]
    return outs, tape.gradient([o for o, _ in pairs], [xs[i] for i in diff],
                               output_gradients=[tf.constant(g) for _, g in pairs])
  import torch  # pylint: disable=g-import-not-at-top
  xs = [torch.tensor(x, requires_grad=i in diff) for i, x in enumerate(inputs)]
  out = fn(*xs)
  outs = out if isinstance(out, tuple) else (out,)
  pairs = [(o, torch.tensor(g)) for o, g in zip(outs, cotangent) if g is not None]
  grads = torch.autograd.grad([o for o, _ in pairs], [xs[i] for i in diff],
                              grad_outputs=[g for _, g in pairs], allow_unused=True)
  return [o.detach() for o in outs], grads


def evaluate(op: str, params: dict, inputs, cotangent):
  import keras  # pylint: disable=g-import-not-at-top
  from crossgrad.api import keras as cg_keras  # pylint: disable=g-import-not-at-top
  operation = cg_keras.get(op, **params)
  diff = operation.op.diff_argnums
  outs, grads = _vjp(keras.backend.backend(), operation, list(inputs), diff, cotangent)
  cotangents = [None] * len(inputs)
  for i, g in zip(diff, grads):
    cotangents[i] = (np.zeros_like(inputs[i]) if g is None
                     else np.asarray(keras.ops.convert_to_numpy(g)))
  return tuple(np.asarray(keras.ops.convert_to_numpy(o)) for o in outs), tuple(cotangents)


def main():
  replies = os.fdopen(os.dup(1), "wb")
  os.dup2(2, 1)  # Framework output must not corrupt the replies.
  if os.environ.get("KERAS_BACKEND") == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    jax.config.update("jax_enable_x64", True)  # float64 rows stay float64.
  from crossgrad.checker import selection  # pylint: disable=g-import-not-at-top
  for module in filter(None, os.environ.get("CROSSGRAD_MODULES", "").split(os.pathsep)):
    selection.load_module(module)  # A dotted name or a .py path, as --module takes.
  while True:
    try:
      request = pickle.load(sys.stdin.buffer)
    except EOFError:
      return
    try:
      reply = ("ok", *evaluate(*request))
    except Exception as e:  # pylint: disable=broad-except  # Reported on the row.
      reply = ("error", f"{type(e).__name__}: {e}")
    pickle.dump(reply, replies)
    replies.flush()


if __name__ == "__main__":
  main()
