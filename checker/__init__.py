"""The cross-check: every backend against the NumPy reference, and the reference against
finite differences (`engine`, `finite_diff`), on sampled and special values
(`special_values`), compared in relative error, ULPs or bits (`compare`), for a selection
checked up front (`selection`); its `report`, and the absl binary (`main`).

The only layer that loads every backend; it does so by name through
`crossgrad.backends.common.base.load`, and only for the backends asked for.
"""
