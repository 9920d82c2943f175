"""Keras layers, JAX forms and torch.nn.Modules of built-in ops.

Each module imports its framework, so import only the one you use, e.g.
``from crossgrad.layers import keras_center_loss`` or ``torch_center_loss``.
"""
