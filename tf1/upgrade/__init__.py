r"""``crossgrad-upgrade``: rewrites a TF1 project's gradient overrides into TF2 code on
`crossgrad.tf1`, the way ``tf_upgrade_v2`` rewrites names.

  python -m crossgrad.tf1.upgrade SRC DST [--report=FILE] [--diff] [--port]
  python -m crossgrad.tf1.upgrade SRC --in_place

Each idiom `crossgrad.tf1.scan` finds becomes its drop-in (built on libcst, so formatting
and comments stay): op-type ``gradient_override_map`` blocks -> `override_map`
(`override_maps`); the random-name py_func helper and other py_funcs under a
``{"PyFunc": name}`` override -> `py_func` with ``grad=`` (`py_funcs`); ``Defun`` with
``python_grad_func`` -> `Defun` (`defuns`); under ``import tensorflow as tf``, TF1 names
TF2 dropped -> ``tf.compat.v1`` (`compat_names`). ``--port`` also writes a module of
`crossgrad.tf1.port` ops next to each rewritten file (`ports`). The report (`report`)
lists every finding as changed, kept or left with the reason; a file whose rewrite would
not parse is left as it was.
"""
