"""crossgrad-port: custom gradients already written in torch, JAX or TensorFlow become
crossgrad ops, proved equal to their originals (docs/porting.md).

A framework plugs in with a source module (`crossgrad.port.definition` says what it
provides) and a translation table (`crossgrad.port.tables`).
"""
