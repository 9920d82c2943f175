"""``crossgrad.tensorflow``: the TensorFlow backend and the op families in TensorFlow."""

from crossgrad.backends.tensorflow import MODES
from crossgrad.backends.tensorflow import NAME
from crossgrad.backends.tensorflow import devices
from crossgrad.backends.tensorflow import get
from crossgrad.backends.tensorflow import spec_of
from crossgrad.backends.tensorflow import xp
from crossgrad.bernoulli.tensorflow import GENERATORS
from crossgrad.bernoulli.tensorflow import bernoulli_mask
from crossgrad.bernoulli.tensorflow import bernoulli_mask_sampled
from crossgrad.bernoulli.tensorflow import uniform_noise
from crossgrad.sparse import conv as _sparse_conv
from crossgrad.sparse import submanifold as _submanifold

sparse_conv2d = _sparse_conv.for_backend(NAME)
submanifold_conv2d = _submanifold.for_backend(NAME)

__all__ = ("GENERATORS", "MODES", "NAME", "bernoulli_mask", "bernoulli_mask_sampled", "devices",
           "get", "sparse_conv2d", "spec_of", "submanifold_conv2d", "uniform_noise", "xp")
