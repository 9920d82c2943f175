"""Benchmarks: ``python -m crossgrad.benchmarks.<name>``; each prints a table and writes JSON."""
