"""Sparse convolution after sparse_cnn (docs/sources.md): `SparseData`, rulebooks, the layers.

``conv_rulebook(x, f, stride=1, capacity=None)`` and ``submanifold_rulebook(x, f)`` build
a `Rulebook` once for an active set, to pass as ``rulebook=`` to every layer on that set
(``cg.<backend>.sparse_conv2d`` / ``submanifold_conv2d``).
"""

from crossgrad.sparse.rulebook import Rulebook
from crossgrad.sparse.rulebook import for_conv as conv_rulebook
from crossgrad.sparse.rulebook import for_submanifold as submanifold_rulebook
