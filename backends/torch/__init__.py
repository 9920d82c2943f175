"""The PyTorch backend (`crossgrad.backends.common.protocol`), as
`crossgrad.backends.common.base.load("torch")` returns it: the public names of its
emitter (what users get: ``xp``, ``get``) and of its harness (what the checker drives:
``evaluate``, its higher-order and transformed runs, ``precision_scope``).
"""

from crossgrad.backends.torch.emitter import (
    ARRAY_MODULES, CONJUGATE_COMPLEX_GRADIENTS, CREATION, MODES, NAME, STANDARD, VERSION,
    as_dtype, compile_cache_stats, devices, enable_compile_cache, find_device, get,
    register_container, set_cpu_device_count, spec_of, warm_up, xp,
)
from crossgrad.backends.torch.harness import (
    EXTRA_MODES, EXTRA_TRANSFORMS, LAYOUTS, TRANSFORMS, UNSUPPORTED_CHECKS, evaluate,
    evaluate_higher_order, evaluate_transformed, precision_scope, scaled_kernel,
)

__all__ = ("ARRAY_MODULES", "CONJUGATE_COMPLEX_GRADIENTS", "CREATION", "EXTRA_MODES",
           "EXTRA_TRANSFORMS", "LAYOUTS",
           "MODES", "NAME", "STANDARD", "TRANSFORMS", "UNSUPPORTED_CHECKS", "VERSION", "as_dtype",
           "compile_cache_stats", "devices", "enable_compile_cache", "evaluate",
           "evaluate_higher_order", "evaluate_transformed", "find_device", "get",
           "precision_scope", "register_container", "scaled_kernel", "set_cpu_device_count",
           "spec_of", "warm_up", "xp")
