"""``crossgrad.torch``: the PyTorch backend and the op families in PyTorch."""

from crossgrad.backends.torch import MODES
from crossgrad.backends.torch import NAME
from crossgrad.backends.torch import as_dtype
from crossgrad.backends.torch import devices
from crossgrad.backends.torch import find_device
from crossgrad.backends.torch import get
from crossgrad.backends.torch import spec_of
from crossgrad.backends.torch import xp
from crossgrad.bernoulli import torch as bernoulli
from crossgrad.bernoulli.torch import bernoulli_mask
from crossgrad.bernoulli.torch import bernoulli_mask_sampled
from crossgrad.bernoulli.torch import uniform_noise
from crossgrad.sparse import containers as _sparse_containers
from crossgrad.sparse import conv as _sparse_conv
from crossgrad.sparse import submanifold as _submanifold

sparse_conv2d = _sparse_conv.for_backend(NAME)
submanifold_conv2d = _submanifold.for_backend(NAME)
_sparse_containers.register(NAME)

__all__ = ("MODES", "NAME", "as_dtype", "bernoulli", "bernoulli_mask", "bernoulli_mask_sampled",
           "devices", "find_device", "get", "sparse_conv2d", "spec_of", "submanifold_conv2d",
           "uniform_noise", "xp")
