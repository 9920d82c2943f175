"""Runnable examples (``python -m crossgrad.examples.<name>``); each also runs in the tests."""
