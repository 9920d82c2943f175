"""crossgrad's built-in ops; importing this package registers them."""

from crossgrad.registry.ops.bernoulli_mask import BERNOULLI_MASK
from crossgrad.registry.ops.custom_add import CUSTOM_ADD
from crossgrad.registry.ops.leaky_relu import LEAKY_RELU
from crossgrad.registry.ops.ste_quantize import STE_QUANTIZE

BUILTIN = (BERNOULLI_MASK, CUSTOM_ADD, LEAKY_RELU, STE_QUANTIZE)
