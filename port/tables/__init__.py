"""One translation `crossgrad.port.translate.Table` per source framework (``TABLE`` in
``torch``, ``jax``, ``tensorflow``), each entry checked against its framework by
tests/test_port_tables.py."""
