"""The Bernoulli attention mask as a Keras layer (`attention.keras`) and a JAX function
(`attention.jax`); each module imports its framework."""
