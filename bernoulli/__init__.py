"""The Bernoulli attention mask family (seed 003): samplers per framework around the
`bernoulli_mask` op (`crossgrad.registry.ops.bernoulli_mask`), reached as
``crossgrad.tensorflow.bernoulli_mask_sampled`` and ``crossgrad.jax.bernoulli_mask_sampled``,
with the counter-based random words they share (`random_bits`)."""
