"""Eager torch op bodies on plain tensors after a clean probe (backends/torch/plain_bodies.py):
a body sees the standard's array object's semantics on every call, and a body that has
nothing to lose runs on plain tensors from its second call."""

import numpy as np
import pytest
import torch
from torch.autograd import forward_ad

import crossgrad as cg
from crossgrad.backends.torch import array_object as torch_array_object
from crossgrad.backends.torch import plain_bodies as torch_plain_bodies

ARRAY, TENSOR = torch_array_object.Array, torch.Tensor


def _op(name, forward, backward=None):
  """An op of one float input, its forward ``forward(xp, x)`` returning one output; its
  backward passes the cotangent through unless given."""
  def default_backward(xp, residuals, g):
    del xp, residuals
    return (g,)

  return cg.torch.get(cg.OpDef(name, lambda xp, x: (forward(xp, x), ()),
                               backward or default_backward,
                               sample=lambda rng: (rng.standard_normal((3,)),)))


def _seeing(name, seen):
  """An op whose forward records the type of array it gets and doubles it."""
  def forward(xp, x):
    del xp
    seen.append(type(x))
    return x * 2.0

  return _op(name, forward)


def test_a_plain_body_runs_on_plain_tensors_from_its_second_call():
  seen = []
  fn = _seeing("plain_bodies_seen", seen)
  x = torch.arange(3.0)
  for _ in range(3):
    np.testing.assert_array_equal(fn(x).numpy(), [0.0, 2.0, 4.0])
  assert seen == [ARRAY, TENSOR, TENSOR]
  fn(torch.arange(4.0))  # Another shape: probed again.
  fn(torch.arange(3.0, dtype=torch.float64))  # Another dtype too.
  assert seen[3:] == [ARRAY, ARRAY]


def test_the_backward_is_probed_on_its_own():
  seen = []

  def backward(xp, residuals, g):
    del xp, residuals
    seen.append(type(g))
    return (g * 2.0,)

  fn = _op("plain_bodies_backward", lambda xp, x: x * 2.0, backward)
  x = torch.ones(3, requires_grad=True)
  for _ in range(3):
    (grad,) = torch.autograd.grad(fn(x).sum(), x)
    np.testing.assert_array_equal(grad.numpy(), [2.0, 2.0, 2.0])
  assert seen == [ARRAY, TENSOR, TENSOR]


@pytest.mark.parametrize("forward, expected", [
    (lambda xp, x: (x.size, xp.sum(x) / x.size * xp.ones_like(x)), 4),
    (lambda xp, x: ((x + xp.asarray(0.5, dtype=xp.float64)).dtype, xp.mean(x) + 0.0 * x),
     torch.float64),
], ids=["size", "promotion"])
def test_the_standard_holds_on_every_call(forward, expected):
  """``size`` (torch's is a method) and float32 + float64 0-d (torch keeps float32)."""
  seen = []

  def recording(xp, x):
    fact, out = forward(xp, x)
    seen.append(fact)
    return out

  fn = _op(f"plain_bodies_{id(forward)}", recording)
  x = torch.arange(4.0)
  for _ in range(100):
    np.testing.assert_allclose(fn(x).numpy(), [1.5] * 4)
  assert seen == [expected] * 100


def test_a_divergence_on_some_calls_only_keeps_the_array_object():
  """The branch reading ``size`` runs on a later call with the same signature: the values
  that chose it reached Python through ``bool``, which the probe recorded."""
  seen = []

  def forward(xp, x):
    seen.append(type(x))
    if xp.any(x < 0.0):
      return x / x.size
    return x

  fn = _op("plain_bodies_some_calls", forward)
  for _ in range(3):
    np.testing.assert_array_equal(fn(torch.ones(2)).numpy(), [1.0, 1.0])
  np.testing.assert_array_equal(fn(-torch.ones(2)).numpy(), [-0.5, -0.5])
  assert seen == [ARRAY] * 4


@pytest.mark.parametrize("forward", [
    lambda xp, x: x / x.size if float(xp.max(x)) > 1.0 else x,
    lambda xp, x: x / x.size if xp.nonzero(x > 1.0)[0].shape[0] > 1 else x,
    lambda xp, x: x / x.size if x[x > 1.0].shape[0] > 1 else x,
    lambda xp, x: x / x.size if xp.zeros((xp.sum(x > 1.0),)).shape[0] > 1 else x,
], ids=["float", "nonzero", "mask", "zero_d_count"])
def test_values_steering_control_flow_keep_the_array_object(forward):
  """Values reach Python (``float``) or decide a shape (``nonzero``, a mask, a 0-d count):
  a later call with the same signature takes the branch reading ``size``."""
  fn = _op(f"plain_bodies_steered_{id(forward)}", forward)
  for _ in range(3):
    np.testing.assert_array_equal(fn(torch.ones(4)).numpy(), [1.0] * 4)
  np.testing.assert_array_equal(fn(torch.tensor([4.0, 4.0, 2.0, 2.0])).numpy(),
                                [1.0, 1.0, 0.5, 0.5])


def test_augmented_assignment_never_writes_into_the_input():
  """``x += 1`` makes a new array (torch's would write into the caller's tensor)."""
  def forward(xp, x):
    del xp
    x += 1.0
    return x

  fn = _op("plain_bodies_augmented", forward)
  x = torch.zeros(2)
  for _ in range(3):
    np.testing.assert_array_equal(fn(x).numpy(), [1.0, 1.0])
  np.testing.assert_array_equal(x.numpy(), [0.0, 0.0])


def test_an_attribute_only_torch_has_keeps_the_array_object():
  def forward(xp, x):
    del xp
    return x * 3.0 if hasattr(x, "requires_grad") else x * 2.0

  fn = _op("plain_bodies_hasattr", forward)
  for _ in range(3):
    np.testing.assert_array_equal(fn(torch.ones(1)).numpy(), [2.0])


def test_a_body_that_raised_stays_on_the_array_object():
  seen, calls = [], []

  def forward(xp, x):
    del xp
    seen.append(type(x))
    calls.append(None)
    if len(calls) == 1:
      raise ValueError("first call")
    return x * 2.0

  fn = _op("plain_bodies_raised", forward)
  with pytest.raises(ValueError, match="first call"):
    fn(torch.ones(1))
  fn(torch.ones(1))
  fn(torch.ones(1))
  assert seen == [ARRAY] * 3


def test_always_wrapped():
  seen = []
  fn = _seeing("plain_bodies_always", seen)
  with torch_plain_bodies.always_wrapped():
    for _ in range(3):
      fn(torch.ones(2))
  assert seen == [ARRAY] * 3


def _vmapped(fn, x):
  torch.func.vmap(fn)(torch.stack([x, x]))


def _compiled(fn, x):
  torch.compile(fn, backend="eager")(x)


def _forward_ad(fn, x):
  with forward_ad.dual_level():
    fn(forward_ad.make_dual(x, torch.ones_like(x)))


def _on_meta(fn, x):
  fn(x.to("meta"))


@pytest.mark.parametrize("transform", [_vmapped, _compiled, _forward_ad, _on_meta],
                         ids=["vmap", "compile", "forward_ad", "meta"])
def test_transformed_calls_of_a_new_signature_see_the_array_object_and_are_not_remembered(
    transform):
  """Under vmap, torch.compile and forward-mode AD, and on meta tensors, no probe runs: a
  new signature's calls are wrapped, and none is remembered: the next eager call with the
  same signature is probed."""
  seen = []
  fn = _seeing(f"plain_bodies_{transform.__name__}", seen)
  x = torch.ones(3)
  torch.compiler.reset()
  for _ in range(2):
    transform(fn, x)
  assert seen and set(seen) == {ARRAY}
  assert not _remembered(fn)
  del seen[:]
  for _ in range(2):
    fn(x)
  assert seen == [ARRAY, TENSOR] and _remembered(fn)


def _twice(fn, x):
  """``fn`` of ``x`` under vmap (two examples) and under forward-mode AD (tangent ones):
  the outputs and the tangent."""
  batched = torch.func.vmap(fn)(torch.stack([x, 2.0 * x]))
  with forward_ad.dual_level():
    tangent = forward_ad.unpack_dual(fn(forward_ad.make_dual(x, torch.ones_like(x)))).tangent
  return batched, tangent


@pytest.mark.parametrize("forward, plain", [
    (lambda xp, x: x * 3.0, True),
    (lambda xp, x: x * 3.0 * (xp.sum(x) / x.size) / (xp.sum(x) / x.size), False),
], ids=["plain", "size"])
def test_transformed_calls_run_as_the_eager_probe_found(forward, plain):
  """Under vmap and forward-mode AD a signature probed eagerly runs as found: on plain
  tensors where it changes nothing, on `Array` where it does (``size``), with the values
  of an eager call either way."""
  seen = []

  def recording(xp, x):
    seen.append(type(x))
    return forward(xp, x)

  def backward(xp, residuals, g):
    del xp, residuals
    return (g * 3.0,)

  fn = _op(f"plain_bodies_after_eager_{plain}", recording, backward)
  x = torch.arange(1.0, 4.0)
  for _ in range(2):
    fn(x)
  del seen[:]
  batched, tangent = _twice(fn, x)
  np.testing.assert_allclose(batched.numpy(), [[3.0, 6.0, 9.0], [6.0, 12.0, 18.0]])
  np.testing.assert_allclose(tangent.numpy(), [3.0, 3.0, 3.0])
  assert set(seen) == {TENSOR if plain else ARRAY}


def _remembered(fn) -> list:
  """The verdicts the op core of ``fn`` remembers: in its signatures' memos and by walked
  signature."""
  core = fn.core
  memos = [v for s in core._signatures.values() if s.memo for v in s.memo if v is not None]  # pylint: disable=protected-access
  return memos + list(core._body._walked.values())  # pylint: disable=protected-access


def test_a_backward_after_a_forward_that_reads_values_is_known_by_its_own_arguments():
  """The forward lets a value reach Python (``float``) and hands it to the backward, whose
  branch on it reads ``size``: each constant is a signature of its own, so the call with
  another one runs on `Array` (known by the forward's input keys alone, it would run on
  plain tensors, where ``size`` is a method)."""
  def forward(xp, x):
    return x * 1.0, (float(xp.max(x)),)

  def backward(xp, residuals, g):
    del xp
    (largest,) = residuals
    return (g / g.size if largest > 1.0 else g,)

  fn = cg.torch.get(cg.OpDef("plain_bodies_value_residual", forward, backward,
                             sample=lambda rng: (rng.standard_normal((4,)),)))
  for _ in range(3):
    x = torch.ones(4, requires_grad=True)
    (grad,) = torch.autograd.grad(fn(x).sum(), x)
    np.testing.assert_array_equal(grad.numpy(), [1.0] * 4)
  x = torch.tensor([4.0, 4.0, 2.0, 2.0], requires_grad=True)
  (grad,) = torch.autograd.grad(fn(x).sum(), x)
  np.testing.assert_array_equal(grad.numpy(), [0.25] * 4)


class _Subclass(torch.Tensor):
  pass


def test_a_tensor_subclass_sees_the_array_object_on_every_call():
  """Its keys (shape and dtype) are a plain tensor's: the type is what tells it apart."""
  seen = []
  fn = _seeing("plain_bodies_subclass", seen)
  for _ in range(2):
    fn(torch.ones(3))
  for _ in range(2):
    fn(torch.ones(3).as_subclass(_Subclass))
  assert seen == [ARRAY, TENSOR, ARRAY, ARRAY]
