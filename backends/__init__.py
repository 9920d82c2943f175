"""Backends (numpy, tensorflow, jax); each imports its framework only when loaded."""
