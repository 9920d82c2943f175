"""The TensorFlow backend (`crossgrad.backends.common.protocol`), as
`crossgrad.backends.common.base.load("tensorflow")` returns it: the public names of its
emitter (what users get: ``xp``, ``get``) and of its harness (what the checker drives:
``evaluate``, its higher-order and transformed runs, ``precision_scope``).
"""

from crossgrad.backends.tensorflow.emitter import (
    ARRAY_MODULES, CONJUGATE_COMPLEX_GRADIENTS, MODES, NAME, VERSION, devices, get,
    register_container, set_cpu_device_count, spec_of, xp,
)
from crossgrad.backends.tensorflow.harness import (
    EXTRA_MODES, TRANSFORMS, UNSUPPORTED_CHECKS, add_round_trip, evaluate,
    evaluate_higher_order, evaluate_transformed, precision_scope, scaled_kernel,
)

__all__ = ("ARRAY_MODULES", "CONJUGATE_COMPLEX_GRADIENTS", "EXTRA_MODES", "MODES", "NAME",
           "TRANSFORMS", "UNSUPPORTED_CHECKS", "VERSION", "add_round_trip", "devices",
           "evaluate", "evaluate_higher_order", "evaluate_transformed", "get",
           "precision_scope", "register_container", "scaled_kernel", "set_cpu_device_count",
           "spec_of", "xp")
