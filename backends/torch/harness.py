"""What the checker drives in torch (`protocol.Backend`, `protocol.HigherOrder`): the op run on
NumPy inputs eagerly or under `torch.compile`, its forward mode, double backward and
`torch.func.vmap`, and the precision they run in.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch.autograd import forward_ad

from crossgrad.backends.common import base, scaled_rules
from crossgrad.backends.torch.emitter import MODES, NAME, find_device, get
# The emitter's own: which tensors have gradients, and its compile warm-up.
from crossgrad.backends.torch.emitter import _inexact, _wait_for_warm_up
from crossgrad.registry import validation
from crossgrad.registry.errors import CrossgradError
from crossgrad.registry.opdef import OpDef

EXTRA_MODES = ()  # No export round trip yet.
TRANSFORMS = ("vmap", "batched_vjp")
# Run when asked for: ``vmap`` under `torch.compile`, where Dynamo traces the op's
# autograd.Function inside a torch.func transform.
EXTRA_TRANSFORMS = ("compiled_vmap",)
LAYOUTS = ("strided",)
UNSUPPORTED_CHECKS = {
    ("jvp", "compile"): "torch.compile cannot trace an autograd.Function with a custom jvp "
                        "(Dynamo: 'Unsupported custom jvp'); a compiled torch.func.jvp "
                        "differentiates the twin's forward as plain code, ignoring the "
                        "op's backward (a surrogate's tangent would be wrong)",
    ("second_order", "compile"): "torch.compile with aot_autograd does not currently "
                                 "support double backward"}


def _from_numpy(x: np.ndarray, device: torch.device) -> torch.Tensor:
  x = np.asarray(x)
  if x.dtype.name == "bfloat16":
    return torch.as_tensor(x.astype(np.float32)).to(device=device, dtype=torch.bfloat16)
  return torch.as_tensor(x).to(device)


def _to_numpy(x: torch.Tensor) -> np.ndarray:
  x = x.detach().cpu()
  if x.dtype == torch.bfloat16:
    import ml_dtypes  # pylint: disable=g-import-not-at-top  # NumPy's bfloat16.
    return x.float().numpy().astype(ml_dtypes.bfloat16)
  return x.numpy()


def _compiled(fn: Callable[..., Any], args: Sequence[torch.Tensor]) -> Callable[..., Any]:
  """``torch.compile(fullgraph=True, dynamic=False)`` of ``fn`` (an op from `get`) for
  the shapes, dtypes and devices of ``args``, made once (`base.compiled`) in a code object
  of its own (`base.own_code`), so that each compiles once: Dynamo's recompile limit is
  per code object and under ``fullgraph=True`` reaching it fails the call, which a check
  meeting one op at many sizes (checks from Python, a benchmark) would otherwise do."""
  _wait_for_warm_up()  # Inductor would otherwise run the probe (again) now.

  def run(*tensors):
    return fn(*tensors)
  signature = tuple((a.shape, a.stride(), a.dtype, a.device) for a in args)
  return base.compiled((fn, "compile", signature), lambda: torch.compile(
      base.own_code(run), fullgraph=True, dynamic=False))


def _strided(x: torch.Tensor) -> torch.Tensor:
  """``x`` as a non-contiguous view with its values: every other element of a buffer whose
  last axis is twice as long (the gaps hold NaN, which a kernel reading them shows); a
  tensor of at most one element, which every layout stores alike, unchanged."""
  if x.numel() < 2:
    return x
  buffer = torch.full((*x.shape[:-1], 2 * x.shape[-1]), float("nan") if x.is_floating_point()
                      else 0, dtype=x.dtype, device=x.device)
  buffer[..., ::2] = x
  return buffer[..., ::2]


def _laid_out(x: torch.Tensor, layout: str | None) -> torch.Tensor:
  if layout is not None and layout not in LAYOUTS:
    raise CrossgradError("unknown layout", backend=NAME, argument="layout",
                         expected=" or ".join(LAYOUTS) + " or None", actual=repr(layout))
  return _strided(x) if layout == "strided" else x


def _on_device(op: OpDef, inputs: Sequence[np.ndarray], device: str,
               layout: str | None = None):
  """The torch device of ``device`` and the inputs as tensors on it (in ``layout``)."""
  validation.check_input_count(op, NAME, inputs)
  target = find_device(device)
  return target, [_laid_out(_from_numpy(x, target), layout) for x in inputs]


def _vjp(run: Callable[..., Any], op: OpDef, args: list, cotangent: Sequence[Any],
         target: torch.device, create_graph: bool = False, layout: str | None = None):
  """Outputs (a tuple) of ``run(*args)`` and the cotangents of the differentiable inputs
  (zeros where unused) for output ``cotangent``; with ``create_graph``, differentiable."""
  diff_args = [args[i] for i in op.diff_argnums]
  for x in diff_args:  # An integer one is the call's error to report.
    x.requires_grad_(_inexact(x))
  outs = validation.as_tuple(run(*args))
  pairs = [(o, _laid_out(_from_numpy(c, target), layout)) for o, c in zip(outs, cotangent)
           if c is not None]
  grads = (torch.autograd.grad([o for o, _ in pairs], diff_args,
                               grad_outputs=[c for _, c in pairs], allow_unused=True,
                               create_graph=create_graph)
           if pairs else [None] * len(diff_args))
  return outs, [torch.zeros_like(a) if g is None else g for a, g in zip(diff_args, grads)]


def evaluate(op: OpDef, params: dict, inputs: Sequence[np.ndarray], cotangent: Sequence[Any],
             *, device: str = "cpu:0", mode: str = "eager", layout: str | None = None):
  """Outputs (as a tuple) and input cotangents, eagerly or under ``torch.compile``; inputs
  and cotangents contiguous, or in one of `LAYOUTS`."""
  base.check_mode(NAME, mode, MODES)
  target, args = _on_device(op, inputs, device, layout)
  fn = get(op, **params)
  outs, grads = _vjp(fn if mode == "eager" else _compiled(fn, args), op, args, cotangent,
                     target, layout=layout)
  return (tuple(_to_numpy(o) for o in outs),
          base.merge_cotangents(op, [_to_numpy(g) for g in grads]))


def _output_tangents(fn: Callable[..., Any], op: OpDef, args: list, tangents: Sequence[Any],
                     target: torch.device) -> tuple:
  """Forward mode (`torch.autograd.forward_ad`, the op's ``jvp``: its backward transposed):
  one tangent per output, None for integer outputs, zeros where no input reaches one."""
  with forward_ad.dual_level():
    duals = list(args)
    for i in op.diff_argnums:
      duals[i] = forward_ad.make_dual(args[i], _from_numpy(tangents[i], target))
    outs = validation.as_tuple(fn(*duals))
    tangent = [forward_ad.unpack_dual(o).tangent for o in outs]
  return tuple(None if not _inexact(o) else
               _to_numpy(torch.zeros_like(o) if t is None else t)
               for o, t in zip(outs, tangent))


def evaluate_higher_order(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                          cotangent: Sequence[Any], tangents: Sequence[Any] | None,
                          direction: Sequence[Any] | None, *, device: str = "cpu:0",
                          mode: str = "eager"):
  """Eagerly: the output tangents for input ``tangents`` (forward mode), and the gradient
  of <vjp(cotangent), direction> with respect to each input (double backward); None for
  integer outputs, inputs without a gradient, and what is not asked for (``tangents`` or
  ``direction`` None). Compiled, neither runs (`UNSUPPORTED_CHECKS`)."""
  base.check_mode(NAME, mode, MODES)
  if mode != "eager":
    raise NotImplementedError("; ".join(f"{kind}: {reason}" for (kind, m), reason
                                        in UNSUPPORTED_CHECKS.items() if m == mode))
  fn = get(op, **params)
  out_tangents = second = None
  if tangents is not None:
    target, args = _on_device(op, inputs, device)
    out_tangents = _output_tangents(fn, op, args, tangents, target)
  if direction is not None:
    target, args = _on_device(op, inputs, device)
    _, grads = _vjp(fn, op, args, cotangent, target, create_graph=True)
    diff_args = [args[i] for i in op.diff_argnums]
    moving = [(g, _from_numpy(direction[i], target))  # The vjp of the vjp, where it moves.
              for g, i in zip(grads, op.diff_argnums) if g.requires_grad]
    found = (torch.autograd.grad([g for g, _ in moving], diff_args,
                                 grad_outputs=[d for _, d in moving], allow_unused=True)
             if moving else [None] * len(diff_args))
    second = base.merge_cotangents(op, [
        _to_numpy(torch.zeros_like(a) if g is None else g) for a, g in zip(diff_args, found)])
  return out_tangents, second


def evaluate_transformed(op: OpDef, params: dict, inputs: Sequence[np.ndarray],
                         cotangent: Sequence[Any], *, device: str = "cpu:0",
                         transforms: Sequence[str] = TRANSFORMS,
                         cotangents: Sequence[Any] | None = None):
  """Outputs and input cotangents of a batch (axis 0 of every array): ``vmap``,
  `torch.func.vmap` of the per-example VJP (`torch.func.vjp`), the op's vmap rule
  generated from its forward and backward (``generate_vmap_rule``); ``compiled_vmap``: the
  same under ``torch.compile(fullgraph=True)``; ``batched_vjp``: at
  the batch's first example, its outputs and `torch.func.vmap` of its one VJP function over
  ``cotangents`` (output cotangents stacked on axis 0; ``cotangent`` where None): the
  backward runs on batched cotangents and unbatched saved tensors."""
  for transform in transforms:
    base.check_mode(NAME, transform, TRANSFORMS + EXTRA_TRANSFORMS)
  target, args = _on_device(op, inputs, device)
  fn = get(op, **params)
  present = [k for k, c in enumerate(cotangent) if c is not None]
  diff = op.diff_argnums

  def pullback(args):
    def with_cotangent(*moved):  # The outputs with a cotangent; all of them as aux.
      outs = validation.as_tuple(base.of_diff(fn, diff, args)(*moved))
      return tuple(outs[k] for k in present), outs
    _, vjp_fn, outs = torch.func.vjp(with_cotangent, *(args[i] for i in diff), has_aux=True)
    return outs, vjp_fn

  def example(args, cots):
    outs, vjp_fn = pullback(args)
    return outs, vjp_fn(tuple(cots))

  def batched_vjp(many):
    outs, vjp_fn = pullback([a[0] for a in args])
    return outs, torch.func.vmap(lambda *cots: vjp_fn(cots))(*many)

  def tensors(arrays):
    return [_from_numpy(arrays[k], target) for k in present]

  results = {}
  for transform in transforms:
    if transform == "vmap":
      outs, grads = torch.func.vmap(example)(args, tensors(cotangent))
    elif transform == "compiled_vmap":
      outs, grads = torch.compile(base.own_code(lambda *both: torch.func.vmap(example)(*both)),
                                  fullgraph=True, dynamic=False)(args, tensors(cotangent))
    else:
      outs, grads = batched_vjp(tensors(cotangent if cotangents is None else cotangents))
    results[transform] = (tuple(_to_numpy(o) for o in outs),
                          base.merge_cotangents(op, [_to_numpy(g) for g in grads]))
  return results


@contextlib.contextmanager
def precision_scope(arrays: Sequence[Any], float32: str | None = None):
  """torch keeps every dtype as it is; with ``float32="highest"``, TF32 is off for CUDA
  matmuls and cuDNN convolutions and the float32 matmul precision is "highest"."""
  del arrays
  if float32 != "highest":
    yield
    return
  saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
           torch.get_float32_matmul_precision())
  torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
  torch.set_float32_matmul_precision("highest")
  try:
    yield
  finally:
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
    torch.set_float32_matmul_precision(saved[2])


def scaled_kernel(fn: Callable[..., Any], factor: float) -> Callable[..., Any] | None:
  """``fn`` (a kernel) with its `torch.autograd.Function` giving ``factor`` times its
  cotangents (and, where it has a ``jvp``, tangents), where ``fn`` is its ``apply`` or its
  closure or globals hold the Function or its ``apply`` (`scaled_rules`); None where it
  reaches none."""
  return scaled_rules.scaled_kernel(fn, _is_rule, lambda rule: _scaled_rule(rule, factor))


def _function_class(value: Any) -> type | None:
  """The `torch.autograd.Function` subclass ``value`` is, or whose ``apply`` it is."""
  owner = value if isinstance(value, type) else getattr(value, "__self__", None)
  if (isinstance(owner, type) and issubclass(owner, torch.autograd.Function)
      and owner is not torch.autograd.Function
      and (owner is value or getattr(value, "__name__", None) == "apply")):
    return owner
  return None


def _is_rule(value: Any) -> bool:
  return _function_class(value) is not None


def _times(factor: float, values: Any) -> Any:
  """Each floating or complex tensor of ``values`` (a tensor or a tuple) times ``factor``."""
  def scale(x):
    return x * factor if isinstance(x, torch.Tensor) and _inexact(x) else x
  return tuple(map(scale, values)) if isinstance(values, tuple) else scale(values)


def _scaled_rule(rule: Any, factor: float) -> Any:
  """A subclass of the Function ``rule`` is (or whose ``apply`` it is) whose ``backward``
  and ``jvp`` return ``factor`` times its own; the subclass itself or its ``apply``."""
  cls = _function_class(rule)
  backward, jvp = cls.backward, cls.jvp

  def scaled_backward(ctx, *upstream):
    return _times(factor, backward(ctx, *upstream))

  def scaled_jvp(ctx, *tangents):
    return _times(factor, jvp(ctx, *tangents))
  members = {"backward": staticmethod(scaled_backward)}
  if jvp is not torch.autograd.Function.jvp:
    members["jvp"] = staticmethod(scaled_jvp)
  scaled = type(f"{cls.__name__}Scaled", (cls,), members)
  return scaled if rule is cls else scaled.apply
