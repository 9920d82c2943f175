"""The standard's array object inside torch op bodies (backends/torch/array_object.py): its
semantics against NumPy's, plain tensors at the op boundary, and built-in ops' Dynamo graphs
and Inductor code unchanged by the wrapper."""

import contextlib
import dataclasses
import inspect

import numpy as np
import pytest
import torch
from torch._inductor.utils import run_and_get_code

import crossgrad as cg
from crossgrad.backends.torch import emitter as torch_backend
from crossgrad.backends.torch import array_object as torch_array_object
from crossgrad.registry.ops import BUILTIN

xp = torch_backend._BODY_XP  # pylint: disable=protected-access


def _array(x):
  return torch_array_object.Array(torch.asarray(x))


def _numpy(a):
  return np.asarray(a)


def test_operators_promote_as_the_standard():
  """torch's own operators treat a 0-d array as a scalar (float32 + float64 0-d stays
  float32); the standard promotes every array."""
  x32, s64 = np.array([1.5, -2.0], np.float32), np.array(0.25, np.float64)
  got = _array(x32) + _array(s64)
  assert got.dtype == torch.float64 and (x32 + s64).dtype == np.float64
  np.testing.assert_array_equal(_numpy(got), x32 + s64)
  x8, x64 = np.array([1, -2, 3], np.int8), np.array([4, 5, 6], np.int64)
  for op in ("__add__", "__sub__", "__mul__", "__floordiv__", "__mod__", "__and__",
             "__or__", "__xor__", "__lshift__", "__lt__", "__ne__", "__eq__"):
    got = getattr(_array(x8), op)(_array(x64))
    expected = getattr(x8, op)(x64)
    assert str(got.dtype).removeprefix("torch.") == expected.dtype.name, op
    np.testing.assert_array_equal(_numpy(got), expected, err_msg=op)


def test_real_and_complex_operands_and_python_scalars():
  x = _array(np.array([1.0, 2.0], np.float32))
  z = _array(np.array([1j, 2 + 1j], np.complex64))
  for got, expected in ((x * z, np.array([1j, 4 + 2j])), (z - x, np.array([-1 + 1j, 1j])),
                        (x / z, np.array([1 / 1j, 2 / (2 + 1j)])), (x * 1j, [1j, 2j])):
    assert got.dtype == torch.complex64
    np.testing.assert_allclose(_numpy(got), expected, rtol=1e-6)
  for got in (x * 2.0, 2.0 * x, x + 1, 1 - x, x / 4, 2 ** x, x ** 2, -x, +x, abs(-x)):
    assert got.dtype == torch.float32
  i = _array(np.array([7, -7], np.int8))
  for got, expected in ((i // 2, [3, -4]), (i % 3, [1, 2]), (i << 1, [14, -14]), (~i, [-8, 6]),
                        (-i, [-7, 7]), (i * 2, [14, -14])):
    assert got.dtype == torch.int8
    np.testing.assert_array_equal(_numpy(got), expected)
  flag = _array(np.array([True, False]))
  np.testing.assert_array_equal(_numpy(~flag), [False, True])
  with pytest.raises(TypeError, match="unsupported operand type"):
    _ = x / None


def test_attributes():
  x = _array(np.arange(24.0).reshape(2, 3, 4))
  assert x.shape == (2, 3, 4) and type(x.shape) is tuple
  assert (x.ndim, x.size, x.dtype) == (3, 24, xp.float64) and type(x.size) is int
  assert x.mT.shape == (2, 4, 3) and x.T.shape == (4, 3, 2) and x[0].T.shape == (4, 3)
  np.testing.assert_array_equal(_numpy(x.T), np.arange(24.0).reshape(2, 3, 4).T)
  assert x.device == torch.device("cpu") and x.__array_namespace__() is xp
  assert x.to_device("cpu").shape == x.shape
  assert xp.zeros((2,), device=x.device).device == x.device
  assert xp.__array_api_version__ == "2024.12" and xp.linalg.inv(x[0, :2, :2] + 1.0).shape == (2, 2)
  with pytest.raises(cg.CrossgradError, match="the standard calls it cumulative_sum"):
    _ = xp.cumsum


def test_indexing():
  base = np.arange(24.0).reshape(4, 6)
  x = _array(base)
  rows = np.array([3, -1, 0], np.int8)
  cases = [(x[1], base[1]), (x[1:3, ::2], base[1:3, ::2]), (x[..., -1], base[..., -1]),
           (x[None, 2], base[None, 2]), (x[_array(np.int16(2))], base[2]),
           (x[_array(rows)], base[rows]), (x[_array(rows.astype(np.uint8) % 4)], base[rows % 4]),
           (x[_array(rows), _array(np.array([0, 5, 1]))], base[rows, [0, 5, 1]]),
           (x[x > 10.0], base[base > 10.0]), (x[::-1], base[::-1]),
           (x[1, ::-2], base[1, ::-2]), (x[..., 4:0:-3], base[..., 4:0:-3]),
           (x[None, 3:-5:-1, -1], base[None, 3:-5:-1, -1]), (x[2:0:1], base[2:0:1]),
           (x[_array(True)], base[None])]
  for got, expected in cases:
    np.testing.assert_array_equal(_numpy(got), expected)
  x[0, ::2] = _array(np.array([-1.0, -2.0, -3.0]))
  base[0, ::2] = [-1.0, -2.0, -3.0]
  np.testing.assert_array_equal(_numpy(x), base)


def test_body_namespace_keeps_signatures():
  assert inspect.signature(xp.sum) == inspect.signature(cg.torch.xp.sum)
  assert xp.float32 is torch.float32 and xp.e == np.e


def _forward(xp_, x, labels):
  assert type(x) is torch_array_object.Array and x.__array_namespace__() is xp_
  hit = xp_.expand_dims(labels, axis=-1) == xp_.arange(x.shape[-1])  # int32 vs int64.
  return xp_.sum(xp_.where(hit, x, 0.0), axis=-1) / x.size, (hit, x.size)


def _backward(xp_, residuals, g):
  hit, size = residuals
  assert type(hit) is torch_array_object.Array and type(g) is torch_array_object.Array
  return xp_.astype(hit, g.dtype) * g[:, None] / size, None


PICK = cg.OpDef("torch_array_pick", _forward, _backward, nondiff=("labels",),
                sample=lambda rng: (rng.standard_normal((3, 4)), np.array([0, 3, 1], np.int32)))


@pytest.mark.parametrize("compiled", [False, True])
def test_an_op_sees_the_array_object_and_its_callers_plain_tensors(compiled):
  op = cg.torch.get(PICK)

  call = torch.compile(op, fullgraph=True, backend="aot_eager") if compiled else op
  x = torch.arange(12.0, dtype=torch.float64).reshape(3, 4).requires_grad_()
  out = call(x, torch.tensor([0, 3, 1], dtype=torch.int32))
  (grad,) = torch.autograd.grad(out.sum(), x)
  assert type(out) is torch.Tensor and type(grad) is torch.Tensor
  np.testing.assert_array_equal(out.detach().numpy(), np.array([0.0, 7.0, 9.0]) / 12)
  np.testing.assert_array_equal(grad.numpy(), np.eye(4)[[0, 3, 1]] / 12)


# One parameter set per op keeps the test quick (each set traces the same body code).
CASES = [(op, op.resolve_params(op.param_sets[0])) for op in BUILTIN]
IDS = [op.name for op in BUILTIN]


def _train_step(op, params, backend):
  """The gradient of the op's floating outputs' sum, the loss compiled with ``backend``."""
  fn = cg.torch.get(op, **params)

  def loss(*args):
    outs = fn(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return sum(o.float().sum() for o in outs if o.is_floating_point())

  compiled = torch.compile(loss, fullgraph=True, backend=backend)

  def step(*args):
    return torch.autograd.grad(compiled(*args), [args[i] for i in op.diff_argnums])

  return step


def _inputs(op):
  return [torch.tensor(x, requires_grad=i in op.diff_argnums)
          for i, x in enumerate(op.sample(np.random.default_rng(0)))]


def _structure(gm) -> list:
  """Every node of a graph module and its subgraphs (an autograd.Function's forward and
  backward): op, target, arguments and value spec, with nodes by position, not by the names
  FX derives from the source's variables."""
  found = []
  for _, module in gm.named_modules():
    if not isinstance(module, torch.fx.GraphModule):
      continue
    position = {}
    for i, node in enumerate(module.graph.nodes):
      position[node] = i
      args = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: f"%{position[n]}")
      value = node.meta.get("example_value")
      spec = (tuple(value.shape), value.dtype) if isinstance(value, torch.Tensor) else None
      target = None if node.op == "placeholder" else str(node.target)
      found.append((node.op, target, repr(args), spec))
  return found


def _dynamo_graph(op, params, wrapped):
  """The FX graphs Dynamo makes of a train step of ``op``, with or without the array object
  in the op's body."""
  graphs = []

  def capture(gm, example_inputs):
    del example_inputs
    graphs.append(_structure(gm))
    return gm.forward

  torch.compiler.reset()
  with contextlib.nullcontext() if wrapped else torch_array_object.native_arrays():
    _train_step(op, params, capture)(*_inputs(op))
  return graphs


@pytest.mark.parametrize("op, params", CASES, ids=IDS)
def test_built_in_ops_trace_to_the_same_dynamo_graph(op, params):
  with_wrapper = _dynamo_graph(op, params, True)
  assert with_wrapper and with_wrapper == _dynamo_graph(op, params, False)


def test_inductor_code_is_the_same():
  """Inductor's kernels for a built-in op with a Python scalar operator, a comparison and a
  select (Inductor compiles what Dynamo traced, the same graphs above for every op; one op's
  forward keeps the test quick)."""
  fn = cg.torch.get("leaky_relu")
  x = torch.tensor(np.random.default_rng(0).standard_normal((5, 7)))
  codes = []
  for wrapped in (True, False):
    torch.compiler.reset()
    with contextlib.nullcontext() if wrapped else torch_array_object.native_arrays():
      _, code = run_and_get_code(torch.compile(fn, fullgraph=True), x)
    codes.append(code)
  assert codes[0] and codes[0] == codes[1]


def _matmul_forward(xp_, x, w):
  del xp_
  return x @ w, (x, w)


def _matmul_backward(xp_, residuals, g):
  del xp_
  x, w = residuals
  return g @ w.mT, x.mT @ g


MATMUL = cg.OpDef("torch_array_matmul", _matmul_forward, _matmul_backward,
                  sample=lambda rng: (rng.standard_normal((2, 3)), rng.standard_normal((3, 4))))


def test_an_op_using_the_matmul_operator_checks_eagerly_and_compiled():
  """``@`` between two arrays in the body, forward and backward: Dynamo traces it through the
  array object's ``__matmul__`` (backends/torch/dynamo_matmul.py)."""
  report = cg.cross_check([MATMUL], backends=["torch"], dtypes=["float32"],
                          modes=["eager", "compile"], special=False)
  assert report.ok, report
  ran = {(r.mode, str(r.check)) for r in report.rows if r.ok}
  assert {("eager", "vjp"), ("compile", "vjp"), ("compile", "forward")} <= ran, ran


def _matmul_backward_by_t(xp_, residuals, g):
  del xp_
  x, w = residuals
  return g @ w.T, x.T @ g


@pytest.mark.parametrize("backward", [_matmul_backward, _matmul_backward_by_t],
                         ids=["mT", "T"])
def test_the_matmul_operator_traces_to_the_plain_tensor_graph(backward):
  op = dataclasses.replace(MATMUL, backward=backward)
  with_wrapper = _dynamo_graph(op, {}, True)
  assert with_wrapper and with_wrapper == _dynamo_graph(op, {}, False)
