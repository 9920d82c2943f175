# A Python 2 file (does not parse as Python 3): the scanner falls back to regex.
import numpy as np
import tensorflow as tf

def py_func(func, inp, Tout, stateful=True, name=None, grad=None):
    rnd_name = 'PyFuncGrad' + str(np.random.randint(0, 1E+8))
    tf.RegisterGradient(rnd_name)(grad)
    g = tf.get_default_graph()
    with g.gradient_override_map({"PyFunc": rnd_name}):
        return tf.py_func(func, inp, Tout, stateful=stateful, name=name)

print "built the py_func helper"

def _MySquareGrad(op, grad):
    return grad * 2 * op.inputs[0]

def mysquare(x, name=None):
    return py_func(np.square, [x], [tf.float32], name=name, grad=_MySquareGrad)
