"""The NumPy backend, the reference (`crossgrad.backends.common.protocol`), as
`crossgrad.backends.common.base.load("numpy")` returns it: the public names of its emitter.
"""

from crossgrad.backends.numpy.emitter import (
    COMPUTE_DTYPES, MODES, NAME, VERSION, devices, evaluate, get, precision_scope,
    register_container, spec_of, vjp, xp,
)

__all__ = ("COMPUTE_DTYPES", "MODES", "NAME", "VERSION", "devices", "evaluate", "get",
           "precision_scope", "register_container", "spec_of", "vjp", "xp")
