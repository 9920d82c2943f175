"""Backend-neutral core: op definitions, the registry, the cross-check engine.

Nothing here imports TensorFlow or JAX; backends are loaded by name when used.
"""
