"""Keras layers and JAX forms of built-in ops.

Each module imports its framework, so import only the one you use, e.g.
``from crossgrad.layers import keras_center_loss``.
"""
