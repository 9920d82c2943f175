"""`OpDef`: one backend-neutral definition of a custom-gradient op, validated on construction."""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any, Callable, Mapping, Sequence

from crossgrad.registry.errors import CrossgradError

GRADIENT_KINDS = ("exact", "surrogate", "declared")
# Differences between frameworks an op may declare for the cross-check's special values.
SPECIAL_DIFFERENCES = {
    "daz": "subnormal inputs read as zero (DAZ), as TensorFlow and XLA do on CPU",
    "signed_zero": "the sign of a zero result differs (xp.sign(-0.0) is 0.0 in NumPy and "
                   "TensorFlow, -0.0 in JAX)",
    "overflow_order": "a sum that overflows depends on the order it adds in (NaN, +-inf or "
                      "a finite value, by framework)",
    "raises": "the framework raises on these values where the reference returns NaN or inf "
              "(TensorFlow's eager matrix inverse of a non-finite matrix)",
}
_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


@dataclasses.dataclass(frozen=True, eq=False)
class OpDef:
  """A custom-gradient op written once against ``xp``, the Array API standard namespace.

  Attributes:
    name: registry name, letters, digits, ``_`` and ``.``.
    forward: ``forward(xp, *inputs, **params) -> (outputs, residuals)``. Inputs are
      positional parameters after ``xp``; static parameters are keyword-only with
      defaults. ``outputs`` is an array or a tuple of arrays.
    backward: ``backward(xp, residuals, g, **params) -> cotangents``, one entry per
      input (``None`` for non-differentiable ones). ``g`` mirrors ``outputs``;
      integer outputs get ``None``.
    gradient: ``"exact"`` (backward is the derivative of forward, checked by finite
      differences), ``"surrogate"`` (a deliberate replacement: the derivative of the
      declared ``surrogate``, checked by finite differences of it) or ``"declared"``
      (the backward is its own specification, e.g. a paper's update rule that no
      function has as its derivative: no oracle, so it is only compared across
      backends; the cross-check's ``declared`` rows say so).
    surrogate: for surrogate ops (required there), ``surrogate(xp, *inputs, **params) ->
      outputs``, a smooth function whose derivative the backward implements.
    sample: ``sample(rng) -> tuple of NumPy inputs`` used by the cross-check.
    nondiff: names or indices of inputs that get no cotangent (integer indices,
      noise); integer-typed inputs must be listed here.
    exact_inputs: for surrogate and declared ops, names or indices of inputs whose
      cotangent is nonetheless the exact derivative of the forward (checked against it
      by finite differences); the surrogate (or the declaration) covers the others.
    param_sets: static-parameter settings the cross-check covers.
    check_inputs: ``check_inputs(specs, **params)`` raising `CrossgradError` for
      inputs the op cannot take; ``specs`` maps input name to `ArraySpec`.
    check_values: ``check_values(xp, *inputs, **params)`` raising `CrossgradError` for
      input values the op cannot take (labels out of range), run before the forward on
      every call. It reads values with `validation.concrete_values` (or only their range,
      cheaper, with `validation.concrete_bounds`), None where they are
      traced (``jax.jit``, ``tf.function``, ``torch.compile``): a check there is skipped,
      and the op's forward, which reads no values, compiles whole (an eager JAX call runs
      it as one program, not op by op).
    doc: one line shown by ``crossgrad.check --list``.
    unsupported_modes: ``{"backend:mode": reason}`` for execution modes the op cannot
      run in (e.g. a host callback under TF's XLA); the cross-check reports them as
      ``skipped`` rows with the reason instead of running them. ``"jax:jvp"`` declares
      a backward JAX cannot transpose (host callbacks): the JAX op is then a
      `jax.custom_vjp` (reverse mode only) and its ``jvp`` rows are skipped.
    edge_samples: ``edge_samples(**params) -> floats``: the op's own boundaries (a clip
      bound, rounding midpoints), which the cross-check's ``special`` rows feed in with
      their neighbouring floats, besides 0, -0.0, +-inf, NaN and the dtype's extremes.
    special_differences: ``{kind: reason}`` for legitimate framework differences the op
      shows on special values, ``kind`` from `SPECIAL_DIFFERENCES` (``"daz"``: a
      subnormal input read as zero changes a branch, e.g. ``x > 0`` at a kink: the row
      also passes where the backend matches the reference run that way; ``"signed_zero"``:
      0.0 and -0.0 results count as equal; ``"overflow_order"``: where either side is NaN
      or infinite, as sums (matmul, reductions) of the dtype's extremes are); the row's
      note names the difference and the reason.
      ``skipped`` rows with the reason instead of running them. Transformation and export
      modes count (``"jax:vmap"``, ``"tensorflow:saved_model"``).
    allow_complex: the op takes complex inputs (complex64, complex128) and may return
      complex outputs; its backward is written in JAX's convention (what ``jax.vjp``
      returns for the forward: ``g * 2 * z`` for ``z * z``, ``2 * g * conj(z)`` for
      ``|z|^2``), which crossgrad converts for TensorFlow and torch (docs/dtypes.md).
    backward_not_differentiable: why the backward cannot be differentiated (e.g. it calls
      an integer or host computation on the residuals); the cross-check then reports its
      ``second_order`` rows as ``skipped`` with this reason.
  """

  name: str
  forward: Callable[..., Any]
  backward: Callable[..., Any]
  gradient: str = "exact"
  surrogate: Callable[..., Any] | None = None
  sample: Callable[[Any], Sequence[Any]] | None = None
  nondiff: Sequence[int | str] = ()
  exact_inputs: Sequence[int | str] = ()
  param_sets: Sequence[Mapping[str, Any]] = ({},)
  check_inputs: Callable[..., None] | None = None
  check_values: Callable[..., None] | None = None
  doc: str = ""
  unsupported_modes: Mapping[str, str] = dataclasses.field(default_factory=dict)
  edge_samples: Callable[..., Sequence[float]] | None = None
  special_differences: Mapping[str, str] = dataclasses.field(default_factory=dict)
  backward_not_differentiable: str | None = None
  allow_complex: bool = False
  input_names: tuple[str, ...] = dataclasses.field(init=False)
  param_defaults: Mapping[str, Any] = dataclasses.field(init=False)
  nondiff_argnums: tuple[int, ...] = dataclasses.field(init=False)
  exact_argnums: tuple[int, ...] = dataclasses.field(init=False)

  def __post_init__(self):
    if not isinstance(self.name, str) or not _NAME_PATTERN.match(self.name):
      raise CrossgradError(
          "invalid op name", argument="name",
          expected="letters, digits, '_' or '.', not starting with a digit",
          actual=repr(self.name))
    for field in ("forward", "backward"):
      if not callable(getattr(self, field)):
        self._fail(f"'{field}' must be callable", argument=field,
                   actual=type(getattr(self, field)).__name__)
    for field in ("surrogate", "sample", "check_inputs", "check_values", "edge_samples"):
      value = getattr(self, field)
      if value is not None and not callable(value):
        self._fail(f"'{field}' must be callable or None", argument=field,
                   actual=type(value).__name__)
    if self.gradient not in GRADIENT_KINDS:
      self._fail("unknown kind of gradient", argument="gradient",
                 expected=" or ".join(map(repr, GRADIENT_KINDS)),
                 actual=repr(self.gradient))
    if self.surrogate is not None and self.gradient != "surrogate":
      self._fail(f"'surrogate' only applies to gradient='surrogate' (a {self.gradient} op "
                 "has none)", argument="surrogate")
    inputs, defaults = self._read_forward_signature()
    object.__setattr__(self, "input_names", inputs)
    object.__setattr__(self, "param_defaults", defaults)
    if self.surrogate is None and self.gradient == "surrogate":
      self._fail("gradient='surrogate' needs the function whose derivative the backward "
                 "implements", argument="surrogate",
                 expected=f"surrogate=lambda xp, {', '.join(inputs)}: ...", actual="None",
                 hint="If no function has the backward as its derivative, declare "
                      "gradient='declared'")
    self._check_signature("backward", self.backward, n_positional=3, with_inputs=False)
    if self.surrogate is not None:
      self._check_signature("surrogate", self.surrogate, n_positional=1 + len(inputs),
                            with_inputs=True)
    if self.edge_samples is not None:
      self._check_signature("edge_samples", self.edge_samples, n_positional=0,
                            with_inputs=False)
    object.__setattr__(self, "nondiff_argnums", self._resolve_nondiff())
    object.__setattr__(self, "exact_argnums", self._resolve_exact())
    object.__setattr__(self, "param_sets", tuple(dict(p) for p in self.param_sets))
    object.__setattr__(self, "unsupported_modes", dict(self.unsupported_modes))
    for key in self.unsupported_modes:
      if not (isinstance(key, str) and key.count(":") == 1):
        self._fail("bad key in 'unsupported_modes'", argument="unsupported_modes",
                   expected="'backend:mode', e.g. 'tensorflow:jit'", actual=repr(key))
    object.__setattr__(self, "special_differences", dict(self.special_differences))
    for kind, reason in self.special_differences.items():
      if kind not in SPECIAL_DIFFERENCES or not isinstance(reason, str) or not reason:
        self._fail("bad entry in 'special_differences'", argument="special_differences",
                   expected=f"{{kind: reason}} with kind one of {sorted(SPECIAL_DIFFERENCES)} "
                   "and the reason in words", actual=f"{kind!r}: {reason!r}")
    for params in self.param_sets:
      self.resolve_params(params)
    reason = self.backward_not_differentiable
    if reason is not None and not (isinstance(reason, str) and reason.strip()):
      self._fail("'backward_not_differentiable' must be a reason (a non-empty string)",
                 argument="backward_not_differentiable", actual=repr(reason))

  # Construction helpers.

  def _fail(self, problem: str, **details: Any):
    raise CrossgradError(problem, op=self.name if isinstance(self.name, str) else None,
                         **details)

  def _read_forward_signature(self) -> tuple[tuple[str, ...], dict[str, Any]]:
    parameters = list(inspect.signature(self.forward).parameters.values())
    positional = [p for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
      self._fail("forward must list its inputs as named positional parameters",
                 argument="forward", actual="*args")
    if not positional:
      self._fail("forward must take the namespace 'xp' first", argument="forward",
                 expected="forward(xp, *inputs, **params)", actual="no positional parameter")
    inputs = tuple(p.name for p in positional[1:])
    if not inputs:
      self._fail("forward takes no inputs", argument="forward",
                 expected="forward(xp, x, ...)", actual=f"forward({positional[0].name})")
    defaults = {}
    for p in parameters:
      if p.kind == p.KEYWORD_ONLY:
        if p.default is p.empty:
          self._fail("static parameters need defaults", argument=f"parameter '{p.name}'",
                     expected=f"{p.name}=<default>", actual="no default")
        defaults[p.name] = p.default
    return inputs, defaults

  def _check_signature(self, field: str, fn: Callable[..., Any], n_positional: int,
                       with_inputs: bool):
    try:
      inspect.signature(fn).bind(*range(n_positional), **self.param_defaults)
    except TypeError as e:
      shape = ("xp, " + ", ".join(self.input_names) if with_inputs
               else "xp, residuals, g" if n_positional else "")
      params = ", ".join(f"{k}=..." for k in self.param_defaults)
      if params:
        params = (", *, " if shape else "*, ") + params
      self._fail(f"'{field}' has the wrong signature", argument=field,
                 expected=f"{field}({shape}{params})", actual=str(e))

  def _argnums(self, field: str) -> tuple[int, ...]:
    argnums = []
    for entry in getattr(self, field):
      if isinstance(entry, str):
        if entry not in self.input_names:
          self._fail(f"unknown input in '{field}'", argument=field,
                     expected=f"one of {list(self.input_names)}", actual=repr(entry))
        argnums.append(self.input_names.index(entry))
      elif isinstance(entry, int) and 0 <= entry < len(self.input_names):
        argnums.append(entry)
      else:
        self._fail(f"bad entry in '{field}'", argument=field,
                   expected=f"an input name or an index in [0, {len(self.input_names)})",
                   actual=repr(entry))
    return tuple(sorted(set(argnums)))

  def _resolve_nondiff(self) -> tuple[int, ...]:
    argnums = self._argnums("nondiff")
    if len(argnums) == len(self.input_names):
      self._fail("every input is non-differentiable", argument="nondiff")
    return argnums

  def _resolve_exact(self) -> tuple[int, ...]:
    argnums = self._argnums("exact_inputs")
    if argnums and self.gradient == "exact":
      self._fail("'exact_inputs' only applies to gradient='surrogate' or 'declared' (an "
                 "exact op is exact in every input)", argument="exact_inputs")
    both = sorted(set(argnums) & set(self.nondiff_argnums))
    if both:
      self._fail("an input cannot be both exact and non-differentiable",
                 argument="exact_inputs", actual=[self.input_names[i] for i in both])
    if argnums and len(argnums) == len(self.diff_argnums):
      self._fail("every differentiable input is exact: declare gradient='exact' instead",
                 argument="exact_inputs")
    return argnums

  # Used by the registry and the backends.

  @property
  def diff_argnums(self) -> tuple[int, ...]:
    return tuple(i for i in range(len(self.input_names)) if i not in self.nondiff_argnums)

  def resolve_params(self, params: Mapping[str, Any], backend: str | None = None) -> dict:
    """Returns the full static parameters, defaults filled in, after checking them."""
    unknown = sorted(set(params) - set(self.param_defaults))
    if unknown:
      raise CrossgradError(
          "unknown static parameter", op=self.name, backend=backend,
          argument=f"parameter '{unknown[0]}'",
          expected=f"one of {sorted(self.param_defaults)}" if self.param_defaults else "none",
          actual=", ".join(unknown))
    resolved = {**self.param_defaults, **params}
    for key, value in resolved.items():
      try:
        hash(value)
      except TypeError:
        raise CrossgradError("static parameters must be hashable", op=self.name,
                             backend=backend, argument=f"parameter '{key}'",
                             expected="a hashable value (number, string, tuple)",
                             actual=type(value).__name__) from None
    return resolved

  def same_definition(self, other: OpDef) -> bool:
    """True if ``other`` defines the same op (e.g. the same module imported twice).
    Functions compare by code; one generated for many ops (such as `crossgrad.tf1.port`'s
    forward) names the functions it stands for in a ``defined_by`` attribute."""
    return _definition_key(self) == _definition_key(other)


def _function_key(fn: Any) -> Any:
  defined_by = getattr(fn, "defined_by", None)
  if defined_by is not None:
    return tuple(_function_key(f) for f in defined_by)
  code = getattr(fn, "__code__", None)
  if code is None:
    return fn
  return (getattr(fn, "__module__", None), getattr(fn, "__qualname__", None), code.co_code,
          code.co_consts)


def _definition_key(op: OpDef) -> tuple:
  return tuple(
      _function_key(value) if callable(value) else repr(value)
      for f in dataclasses.fields(op)
      for value in [getattr(op, f.name)])
