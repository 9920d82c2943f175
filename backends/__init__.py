"""One package per framework behind the written protocol (`common.protocol.Backend`): numpy
(the reference), tensorflow, jax, torch, each with the same module names (`emitter`, and
where the framework needs them `namespace`, `array_object`, `export`); the code they share
is `common`. Each imports its framework only when loaded; none names an op."""
