"""DoReFa-Net's quantizers as tensorpack wrote them for TF1 (fixture): {"Round": "Identity"}
for k-bit values and {"Sign": "Identity", "Mul": "Add"} for 1-bit weights."""

import tensorflow.compat.v1 as tf


def get_dorefa(bitW, bitA):
  G = tf.get_default_graph()

  def quantize(x, k):
    n = float(2 ** k - 1)
    with G.gradient_override_map({"Round": "Identity"}):
      return tf.round(x * n) / n

  def fw(x):
    if bitW == 32:
      return x
    if bitW == 1:  # BWN
      E = tf.stop_gradient(tf.reduce_mean(tf.abs(x)))
      with G.gradient_override_map({"Sign": "Identity", "Mul": "Add"}):
        return tf.sign(x / E) * E
    x = tf.tanh(x)
    x = x / tf.reduce_max(tf.abs(x)) * 0.5 + 0.5
    return 2 * quantize(x, bitW) - 1

  def fa(x):
    if bitA == 32:
      return x
    return quantize(x, bitA)

  return fw, fa
