"""The TensorFlow backend (`crossgrad.backends.common.protocol`), as
`crossgrad.backends.common.base.load("tensorflow")` returns it: the public names of its emitter.
"""

from crossgrad.backends.tensorflow.emitter import (
    ARRAY_MODULES, CONJUGATE_COMPLEX_GRADIENTS, EXTRA_MODES, MODES, NAME, TRANSFORMS,
    UNSUPPORTED_CHECKS, VERSION, add_round_trip, devices, evaluate, evaluate_higher_order,
    evaluate_transformed, get, precision_scope, register_container, set_cpu_device_count,
    spec_of, xp,
)

__all__ = ("ARRAY_MODULES", "CONJUGATE_COMPLEX_GRADIENTS", "EXTRA_MODES", "MODES", "NAME",
           "TRANSFORMS", "UNSUPPORTED_CHECKS", "VERSION", "add_round_trip", "devices", "evaluate",
           "evaluate_higher_order", "evaluate_transformed", "get", "precision_scope",
           "register_container", "set_cpu_device_count", "spec_of", "xp")
