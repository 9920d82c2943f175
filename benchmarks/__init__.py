"""Benchmarks (``python -m crossgrad.benchmarks.<name>``): each prints a table and writes JSON,
every figure a ratio against a baseline measured in the same run."""
