"""``crossgrad.numpy``: the NumPy reference backend and the op families in NumPy."""

from crossgrad.backends.numpy import MODES
from crossgrad.backends.numpy import NAME
from crossgrad.backends.numpy import devices
from crossgrad.backends.numpy import get
from crossgrad.backends.numpy import spec_of
from crossgrad.backends.numpy import vjp
from crossgrad.backends.numpy import xp
from crossgrad.sparse import conv as _sparse_conv
from crossgrad.sparse import submanifold as _submanifold

sparse_conv2d = _sparse_conv.for_backend(NAME)
submanifold_conv2d = _submanifold.for_backend(NAME)

__all__ = ("MODES", "NAME", "devices", "get", "sparse_conv2d", "spec_of", "submanifold_conv2d",
           "vjp", "xp")
