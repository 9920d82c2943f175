"""Benchmarks: each runs as ``python -m crossgrad.benchmarks.<name>``."""
