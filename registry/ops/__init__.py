"""crossgrad's built-in ops; importing this package registers them."""

from crossgrad.registry.ops.bernoulli_mask import BERNOULLI_MASK
from crossgrad.registry.ops.center_loss import CENTER_LOSS
from crossgrad.registry.ops.custom_add import CUSTOM_ADD
from crossgrad.registry.ops.leaky_relu import LEAKY_RELU
from crossgrad.registry.ops.positive_matmul import POSITIVE_MATMUL
from crossgrad.registry.ops.sparse_q import SPARSE_Q
from crossgrad.registry.ops.ste_quantize import STE_QUANTIZE
from crossgrad.registry.ops.submanifold_q import SUBMANIFOLD_Q

BUILTIN = (BERNOULLI_MASK, CENTER_LOSS, CUSTOM_ADD, LEAKY_RELU, POSITIVE_MATMUL, SPARSE_Q,
           STE_QUANTIZE, SUBMANIFOLD_Q)
