"""The sparse family's containers (`SparseData`, `Rulebook`), which each backend's
transformations see into (JAX pytrees), and the backend's ``xp`` with them registered.
Their arrays' backend is `crossgrad.backends.common.base.backend_of`: any backend that declares
``ARRAY_MODULES`` (`crossgrad.backends.common.protocol.Arrays`) carries them, registered ones too.
"""

from __future__ import annotations

from crossgrad.backends.common import base

_CONTAINERS: list[type] = []
_REGISTERED_WITH: set[str] = set()


def container(cls: type) -> type:
  """Class decorator: ``cls`` (with ``flatten``/``unflatten``) becomes a container of every
  backend `register` has seen, now and later."""
  _CONTAINERS.append(cls)
  for name in _REGISTERED_WITH:
    base.load(name).register_container(cls, cls.flatten, cls.unflatten)
  return cls


def register(backend: str) -> None:
  """Makes every container ``backend``'s transformations see into."""
  if backend not in _REGISTERED_WITH:
    for cls in _CONTAINERS:
      base.load(backend).register_container(cls, cls.flatten, cls.unflatten)
    _REGISTERED_WITH.add(backend)


def namespace(backend: str):
  """The backend's ``xp``, with the containers registered with it."""
  register(backend)
  return base.load(backend).xp

