"""Definitions only: `OpDef`, the op registry, the `xp` contract, errors, input validation
and the built-in ops. Imports no framework, no backend and no checker."""
