"""crossgrad's built-in ops; importing this package registers them."""

from crossgrad.registry.ops.custom_add import CUSTOM_ADD
from crossgrad.registry.ops.leaky_relu import LEAKY_RELU
from crossgrad.registry.ops.sparse_q import SPARSE_Q
from crossgrad.registry.ops.ste_quantize import STE_QUANTIZE

BUILTIN = (CUSTOM_ADD, LEAKY_RELU, SPARSE_Q, STE_QUANTIZE)
