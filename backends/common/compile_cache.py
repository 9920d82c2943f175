"""Compile caches across runs, under one crossgrad cache directory.

A second cross-check on the same machine compiles (almost) nothing: JAX keeps its
compiled executables in its persistent compilation cache, PyTorch keeps Inductor's FX
graphs and AOTAutograd's forward/backward graphs (the ``torch.compile`` rows). Each
backend with a cache (`protocol.CompileCache`) keeps it in its own folder, ``<dir>/jax``,
``<dir>/torch``. TensorFlow has none here: its graphs are traced once per run
(`base.compiled`), tracing is most of its cost, and its XLA persistent cache
(``TF_XLA_FLAGS=--tf_xla_persistent_cache_directory``) logs an error on every load on
common x86 CPUs (openxla/xla#44565) for a fraction of a second saved per op.

The directory (`directory`): ``$CROSSGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/crossgrad``,
else ``~/.cache/crossgrad``. The frameworks' cache settings are process-wide, so, like
`cpu_devices`, `configure` is an explicit choice of the caller: ``python -m crossgrad.check``
makes it (``--cache_dir``, ``--nocompile_cache``); importing crossgrad or calling
`crossgrad.cross_check` never does.
"""

from __future__ import annotations

import os
import re
from typing import Mapping, Sequence

from absl import logging

from crossgrad.backends.common import base, protocol

ENV = "CROSSGRAD_CACHE_DIR"


def directory(environ: Mapping[str, str] | None = None) -> str:
  """The crossgrad cache directory: ``$CROSSGRAD_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/crossgrad`` (an absolute ``XDG_CACHE_HOME`` only, as the XDG Base
  Directory spec says), else ``~/.cache/crossgrad``."""
  environ = os.environ if environ is None else environ
  if environ.get(ENV):
    return os.path.abspath(os.path.expanduser(environ[ENV]))
  xdg = environ.get("XDG_CACHE_HOME", "")
  if not os.path.isabs(xdg):
    home = environ.get("HOME") or os.path.expanduser("~")
    xdg = os.path.join(home, ".cache")
  return os.path.join(xdg, "crossgrad")


def configure(path: str, backends: Sequence[str]) -> dict[str, str]:
  """Turns on the compile caches of the named backends that have one, each in
  ``<path>/<backend>``; returns ``{backend: its folder}``. Process-wide and explicit:
  call it before the frameworks compile anything. A folder that cannot be written (a
  read-only file system, as in Bazel's test sandbox) leaves that backend uncached."""
  folders = {}
  for name in backends:
    backend = base.load(name)
    if isinstance(backend, protocol.CompileCache):
      folder = os.path.join(os.path.abspath(path), name)
      if not _writable(folder):  # A read-only home (a sandbox): compile as if uncached.
        logging.warning("crossgrad: %s compile cache off, %s is not writable", name, folder)
        continue
      folders[name] = folder
      backend.enable_compile_cache(folder)
  return folders


def _writable(folder: str) -> bool:
  try:
    os.makedirs(folder, exist_ok=True)
  except OSError:
    return False
  return os.access(folder, os.W_OK)


def stats(backends: Sequence[str]) -> dict[str, dict[str, int]]:
  """``{backend: {"hits": n, "misses": n}}`` of this process so far, for the backends
  whose cache `configure` turned on."""
  out = {}
  for name in backends:
    backend = base.load(name)
    if isinstance(backend, protocol.CompileCache) and backend.compile_cache_stats():
      out[name] = backend.compile_cache_stats()
  return out


PREFIX = "[crossgrad] compile cache "
_PART = re.compile(r"(\w+) loaded (\d+)(?: programs)?, compiled (\d+)")


def summary(path: str, counts: Mapping[str, Mapping[str, int]]) -> str:
  """One line for the report's end: where the caches are and, per backend, how many
  programs it loaded from them (hits) and how many it compiled (misses)."""
  parts = [f"{name} loaded {c['hits']}{' programs' if i == 0 else ''}, compiled {c['misses']}"
           for i, (name, c) in enumerate(counts.items())]
  return f"{PREFIX}{path}: " + ("; ".join(parts) or "nothing compiled")


def parse(line: str) -> tuple[str, dict[str, dict[str, int]]] | None:
  """``(path, counts)`` of a `summary` line, None for another line."""
  if not line.startswith(PREFIX):
    return None
  path, _, rest = line[len(PREFIX):].rstrip("\n").rpartition(": ")
  return path, {name: {"hits": int(hits), "misses": int(misses)}
                for name, hits, misses in _PART.findall(rest)}


def added(counts: Sequence[Mapping[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
  """The counts of several processes (``--jobs``) added up, per backend."""
  total: dict[str, dict[str, int]] = {}
  for each in counts:
    for name, c in each.items():
      mine = total.setdefault(name, {"hits": 0, "misses": 0})
      mine["hits"] += c["hits"]
      mine["misses"] += c["misses"]
  return total
