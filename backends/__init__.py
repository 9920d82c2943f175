"""One module per framework behind the written protocol (`protocol.Backend`): numpy (the
reference), tensorflow, jax. Each imports its framework only when loaded; none names an op."""
