"""``crossgrad.jax``: the JAX backend and the op families in JAX."""

from crossgrad.backends.jax import MODES
from crossgrad.backends.jax import NAME
from crossgrad.backends.jax import devices
from crossgrad.backends.jax import find_device
from crossgrad.backends.jax import get
from crossgrad.backends.jax import spec_of
from crossgrad.backends.jax import xp
from crossgrad.bernoulli.jax import bernoulli_mask
from crossgrad.bernoulli.jax import bernoulli_mask_sampled
from crossgrad.bernoulli.jax import uniform_noise
from crossgrad.sparse import containers as _sparse_containers
from crossgrad.sparse import conv as _sparse_conv
from crossgrad.sparse import submanifold as _submanifold

sparse_conv2d = _sparse_conv.for_backend(NAME)
submanifold_conv2d = _submanifold.for_backend(NAME)
_sparse_containers.register(NAME)

__all__ = ("MODES", "NAME", "bernoulli_mask", "bernoulli_mask_sampled", "devices",
           "find_device", "get", "sparse_conv2d", "spec_of", "submanifold_conv2d",
           "uniform_noise", "xp")
