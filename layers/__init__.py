"""The built-in ops' Keras 3 layers, one definition for every Keras backend.

    from crossgrad.layers import PositiveDense, CenterLoss, BernoulliAttentionMask
    from crossgrad.layers import SubmanifoldConv2D, SparseConv2D

Each runs the op crossgrad emits for the backend Keras runs (``KERAS_BACKEND``); each is
registered with Keras (package ``crossgrad``), so saved models load by name after
``import crossgrad``. Under torch a layer is a `torch.nn.Module`; under JAX
``layer.stateless_call(trainable, non_trainable, *inputs)`` is a pure function
(docs/keras.md). Importing this package imports Keras.
"""

from crossgrad.layers.attention_mask import BernoulliAttentionMask
from crossgrad.layers.center_loss import CenterLoss
from crossgrad.layers.positive_dense import PositiveDense
from crossgrad.layers.sparse_conv import SparseConv2D
from crossgrad.layers.sparse_conv import SubmanifoldConv2D

__all__ = ("BernoulliAttentionMask", "CenterLoss", "PositiveDense", "SparseConv2D",
           "SubmanifoldConv2D")
