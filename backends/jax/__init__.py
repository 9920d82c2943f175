"""The JAX backend (`crossgrad.backends.common.protocol`), as
`crossgrad.backends.common.base.load("jax")` returns it: the public names of its
emitter (what users get: ``xp``, ``get``) and of its harness (what the checker drives:
``evaluate``, its higher-order and transformed runs, ``precision_scope``).
"""

from crossgrad.backends.jax.emitter import (
    ARRAY_MODULES, MODES, NAME, PLATFORMS, VERSION, compile_cache_stats, devices,
    enable_compile_cache, find_device, get, register_container, set_cpu_device_count, spec_of,
    xp,
)
from crossgrad.backends.jax.harness import (
    EXTRA_MODES, NARROWED_INTEGERS, TRANSFORMS, UNSUPPORTED_CHECKS, evaluate,
    evaluate_higher_order, evaluate_transformed, precision_scope, scaled_kernel,
)

__all__ = ("ARRAY_MODULES", "EXTRA_MODES", "MODES", "NAME", "NARROWED_INTEGERS", "PLATFORMS",
           "TRANSFORMS", "UNSUPPORTED_CHECKS", "VERSION", "compile_cache_stats", "devices",
           "enable_compile_cache", "evaluate", "evaluate_higher_order", "evaluate_transformed",
           "find_device", "get", "precision_scope", "register_container", "scaled_kernel",
           "set_cpu_device_count", "spec_of", "xp")
