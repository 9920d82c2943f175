"""The Bernoulli attention mask family (arXiv 1710.11446, as Shigapova's course
writes it): samplers per framework around the
`bernoulli_mask` op (`crossgrad.registry.ops.bernoulli_mask`), reached as
``crossgrad.tensorflow.bernoulli_mask_sampled`` and ``crossgrad.jax.bernoulli_mask_sampled``,
with the counter-based random words they share (`random_bits`)."""
