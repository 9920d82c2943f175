"""Benchmarks (``python -m crossgrad.benchmarks.<name>``): tables and JSON, never tests."""
