"""Runnable examples: ``python -m crossgrad.examples.<name>``."""
