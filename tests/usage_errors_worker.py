"""Runs crossgrad binaries with given command lines (bad ones, ``--help``); prints their
exit statuses and output as JSON.

  python tests/usage_errors_worker.py '[["crossgrad.check", ["--opz=x"]], ...]'

Each binary runs as ``python -m <module> <argv>`` does (`runpy`, as ``__main__``), in a
child process forked from this one after TensorFlow, JAX, torch and crossgrad's libraries
are imported: once, instead of once per binary (several import a framework at the top). Prints one JSON list
of ``{"module", "argv", "status", "output"}`` in the order given (``output``: stdout and
stderr together).
"""

import json
import os
import runpy
import sys
import tempfile
import traceback

# pylint: disable=unused-import
import jax
import tensorflow
import torch

import crossgrad
import crossgrad.benchmarks.timing
import crossgrad.tf1
# pylint: enable=unused-import


def _exit_status(e: SystemExit) -> int:
  if e.code is None or isinstance(e.code, int):
    return e.code or 0
  print(e.code, file=sys.stderr)  # What `sys.exit("message")` does.
  return 1


def _run_in_child(module: str, argv: list[str], output: int) -> int:
  """The exit status of ``python -m module *argv``, run in this (forked) process, its
  stdout and stderr sent to ``output``."""
  os.dup2(output, 1)
  os.dup2(output, 2)
  sys.argv = [module, *argv]
  try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    status = 0
  except SystemExit as e:
    status = _exit_status(e)
  except BaseException:  # pylint: disable=broad-except  # As the interpreter reports it.
    traceback.print_exc()
    status = 1
  sys.stdout.flush()
  sys.stderr.flush()
  return status


def run(module: str, argv: list[str]) -> dict:
  with tempfile.TemporaryFile() as output:
    pid = os.fork()
    if pid == 0:
      os._exit(_run_in_child(module, argv, output.fileno()))  # pylint: disable=protected-access
    _, wait_status = os.waitpid(pid, 0)
    output.seek(0)
    return {"module": module, "argv": argv, "status": os.waitstatus_to_exitcode(wait_status),
            "output": output.read().decode(errors="replace")}


if __name__ == "__main__":
  print(json.dumps([run(module, argv) for module, argv in json.loads(sys.argv[1])]))
