"""TensorFlow's ops for the namespace's most called functions, without the Python around them.

`tf.cast`, `tf.math.abs`, `tf.math.sign`, `tf.math.multiply`, `tf.where`, `tf.reduce_sum` and
`tf.linalg.matmul` convert their arguments, look at dtypes and ranks, dispatch on types and
promote WeakTensors before they run one op: eagerly as much work as the op itself on a
thousand elements (nothing once a graph is traced). The namespace has
already made their arguments tensors of the right dtype, so that work decides nothing there;
these run the same op through `tf.raw_ops`: the same kernel, the same registered gradient,
the same values in every mode. Each says where its caller must not use it.
"""

import tensorflow as tf


def cast(x, dtype):
  """``tf.cast`` of a tensor not already of ``dtype``."""
  return tf.raw_ops.Cast(x=x, DstT=dtype)


def real_abs(x):
  """``tf.math.abs`` of a real tensor (of a complex one it is ``ComplexAbs``)."""
  return tf.raw_ops.Abs(x=x)


def real_sign(x):
  """``tf.math.sign`` of a real tensor (of a complex one it is ``x / |x|``)."""
  return tf.raw_ops.Sign(x=x)


def multiply(x, y):
  """``tf.math.multiply`` of tensors of one dtype."""
  return tf.raw_ops.Mul(x=x, y=y)


def select(condition, x, y):
  """``tf.where`` of a bool condition and two tensors of one dtype."""
  return tf.raw_ops.SelectV2(condition=condition, t=x, e=y)


def reduce_sum(x, axes, keepdims=False):
  """``tf.reduce_sum`` over ``axes`` given (a list or an int tensor, not None)."""
  return tf.raw_ops.Sum(input=x, axis=axes, keep_dims=keepdims)


def matmul(a, b, transpose_a, transpose_b):
  """``tf.linalg.matmul`` of two matrices (rank 2) of one real floating dtype; of others
  (batches, complex, integers, mixed dtypes) ``tf.linalg.matmul`` itself."""
  if a.shape.rank == 2 and b.shape.rank == 2 and a.dtype.is_floating and a.dtype == b.dtype:
    return tf.raw_ops.MatMul(a=a, b=b, transpose_a=transpose_a, transpose_b=transpose_b)
  return tf.linalg.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
