"""What every backend shares: loading by name and the protocol (`base`, `protocol`), the op
core (`op_core`, `kernel_core`), array trees, scoped switches, CPU devices, compile caches."""
