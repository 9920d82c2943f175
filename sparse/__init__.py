"""Sparse convolution after seed 001: `SparseData`, the integer rulebook, the layer."""
