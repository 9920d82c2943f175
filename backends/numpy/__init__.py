"""The NumPy backend, the reference (`crossgrad.backends.common.protocol`), as
`crossgrad.backends.common.base.load("numpy")` returns it: the public names of its
emitter (what users get: ``xp``, ``get``) and of its harness (what the checker drives:
``evaluate``, its higher-order and transformed runs, ``precision_scope``).
"""

from crossgrad.backends.numpy.emitter import (
    COMPUTE_DTYPES, MODES, NAME, VERSION, devices, get, register_container, spec_of, vjp, xp,
)
from crossgrad.backends.numpy.harness import (
    evaluate, precision_scope,
)

__all__ = ("COMPUTE_DTYPES", "MODES", "NAME", "VERSION", "devices", "evaluate", "get",
           "precision_scope", "register_container", "spec_of", "vjp", "xp")
