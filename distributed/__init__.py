"""Local multi-process runs: `launch` starts and watches N processes (no framework),
`frameworks` joins a process to its group in JAX, TensorFlow or PyTorch."""
