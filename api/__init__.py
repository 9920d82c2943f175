"""What users reach as ``crossgrad.numpy``, ``crossgrad.tensorflow`` and ``crossgrad.jax``:
one module per framework re-exporting its backend (`crossgrad.backends`) together with the
op families' entry points for that framework (sparse convolution, Bernoulli samplers).

Each module imports its framework; ``import crossgrad`` loads them lazily.
"""
