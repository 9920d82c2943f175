"""The cross-check: every backend against the NumPy reference, and the reference against
finite differences (`engine`), its `report`, and the absl binary (`main`).

The only layer that loads every backend; it does so by name through
`crossgrad.backends.base.load`, and only for the backends asked for.
"""
