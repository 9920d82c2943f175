"""Counter-based random bits written once against ``xp``: the same words in every backend.

`threefry2x32` is Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3", SC 2011), in uint32 arithmetic that wraps modulo 2**32.
`threefry_bits` lays counters out as JAX does (``jax_threefry_partitionable``, the
default since JAX 0.5): element ``i`` of an array in row-major order gets
``x0 ^ x1`` of the hash of the counter pair ``(0, i)``, so with the key words of
``jax.random.key(seed)`` it reproduces ``jax.random.bits`` (arrays below 2**32
elements). `uniform` turns words into noise in [0, 1) for every backend alike.

Replica-invariant noise: the first axis of a sampled array is the batch, and the samplers'
``example_offset=j0`` says that its row ``r`` is global example ``j0 + r``. Element ``i``
(row-major) then gets counter ``j0 * row_size + i`` (`example_counters`), which is the
counter it has in the global batch drawn at once. So a replica holding examples
``j0 .. j0+b-1`` draws exactly those rows of the single-device noise, bitwise, whatever
the number of replicas or processes and whichever framework draws it, and no two
examples share a counter (the data-parallel dropout bug: every replica repeating one
mask). The key stays the same on every replica; the offset is an explicit argument,
never global state. Counters are uint32: the global batch holds fewer than 2**32 elements.
"""

from __future__ import annotations

from typing import Any

from crossgrad.registry.errors import CrossgradError

# Noise is built from the top bits of a uint32 word, as many as the dtype holds exactly.
UNIFORM_BITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 32}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def _rotate_left(xp, x, r: int):
  return xp.bitwise_or(xp.bitwise_left_shift(x, r), xp.bitwise_right_shift(x, 32 - r))


def threefry2x32(xp, k0: Any, k1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
  """Threefry-2x32-20 of the counter words ``(x0, x1)`` under the key ``(k0, k1)``.

  All four are uint32 arrays (keys broadcast against counters); NumPy warns about the
  intended wrap-around when every operand is 0-d, so give counters at least one axis.
  """
  keys = (k0, k1, xp.bitwise_xor(xp.bitwise_xor(k0, k1), _PARITY))
  x0, x1 = x0 + keys[0], x1 + keys[1]
  for block in range(5):
    for r in _ROTATIONS[block % 2]:
      x0 = x0 + x1
      x1 = xp.bitwise_xor(_rotate_left(xp, x1, r), x0)
    x0 = x0 + keys[(block + 1) % 3]
    x1 = x1 + keys[(block + 2) % 3] + (block + 1)
  return x0, x1


def threefry_bits(xp, k0: Any, k1: Any, counters: Any) -> Any:
  """One uint32 word per element of ``counters`` (their row-major indices, uint32)."""
  x0, x1 = threefry2x32(xp, k0, k1, xp.zeros_like(counters), counters)
  return xp.bitwise_xor(x0, x1)


def example_counters(xp, counters: Any, row_size: Any, example_offset: Any) -> Any:
  """``example_offset * row_size + counters`` (uint32): local counters ``0 .. n-1`` of a
  batch whose rows hold ``row_size`` elements, moved to the rows' global positions."""
  return counters + example_offset * row_size


def check_example_offset(example_offset: Any, shape: Any, backend: str) -> None:
  """A concrete (Python int) offset must be >= 0 and keep every counter below 2**32."""
  if not isinstance(example_offset, int) or isinstance(example_offset, bool):
    return  # A traced tensor: checked by whoever computes it.
  shape = tuple(int(d) for d in shape)
  rows = shape[0] if shape else 1
  row_size = 1
  for d in shape[1:]:
    row_size *= d
  if example_offset < 0 or (example_offset + rows) * row_size > 2**32:
    raise CrossgradError("example_offset out of range", backend=backend,
                         argument="example_offset",
                         expected="0 <= example_offset and (offset + batch) * row size <= 2**32",
                         actual=f"{example_offset} for shape {list(shape)}")


def uniform(xp, bits: Any, dtype: Any) -> Any:
  """``(bits >> (32 - k)) / 2**k`` for k = `UNIFORM_BITS`: exact in ``dtype`` (the backend's
  dtype object), below 1."""
  # torch's dtypes have no name: str() gives "torch.float32".
  k = UNIFORM_BITS[getattr(dtype, "name", None) or str(dtype).rsplit(".", 1)[-1]]
  return xp.astype(xp.bitwise_right_shift(bits, 32 - k), dtype) * (2.0 ** -k)
