"""OpDef validates its definition on construction, with messages that say how to fix it."""

import pytest

import crossgrad as cg


def _fwd(xp, x, *, scale=1.0):
  return x * scale, ()


def _bwd(xp, residuals, g, *, scale=1.0):
  return (g * scale,)


def _op(**overrides):
  fields = dict(name="t_scale", forward=_fwd, backward=_bwd)
  fields.update(overrides)
  return cg.OpDef(**fields)


def test_signature_gives_inputs_and_static_parameters():
  op = _op()
  assert op.input_names == ("x",)
  assert dict(op.param_defaults) == {"scale": 1.0}
  assert op.diff_argnums == (0,)


@pytest.mark.parametrize("overrides, fragment", [
    (dict(name="1bad"), "invalid op name"),
    (dict(name="has space"), "invalid op name"),
    (dict(forward=None), "'forward' must be callable"),
    (dict(backward=3), "'backward' must be callable"),
    (dict(gradient="approximate"), "gradient: unknown kind of gradient"),
    (dict(surrogate=lambda xp, x, *, scale=1.0: x), "only applies to gradient='surrogate'"),
    (dict(forward=lambda xp: (xp, ())), "forward takes no inputs"),
    (dict(forward=lambda xp, *xs: (xs, ())), "named positional parameters"),
    (dict(forward=lambda xp, x, *, scale: (x, ())), "static parameters need defaults"),
    (dict(backward=lambda xp, residuals: None), "'backward' has the wrong signature"),
    (dict(nondiff=("y",)), "unknown input in 'nondiff'"),
    (dict(nondiff=(3,)), "bad entry in 'nondiff'"),
    (dict(nondiff=("x",)), "every input is non-differentiable"),
    (dict(param_sets=({"bits": 3},)), "unknown static parameter"),
    (dict(gradient="surrogate"), "gradient='surrogate' needs the function whose derivative"),
    (dict(gradient="declared", surrogate=lambda xp, x, *, scale=1.0: x),
     "'surrogate' only applies to gradient='surrogate' (a declared op has none)"),
    (dict(edge_samples=lambda xp: (0.0,)), "'edge_samples' has the wrong signature"),
    (dict(special_differences={"ftz": "because"}), "bad entry in 'special_differences'"),
    (dict(special_differences={"daz": ""}), "bad entry in 'special_differences'"),
])
def test_bad_definitions_are_rejected(overrides, fragment):
  with pytest.raises(cg.CrossgradError, match="^\\[crossgrad\\]") as info:
    _op(**overrides)
  assert fragment in str(info.value)


def test_surrogate_without_a_surrogate_is_refused_with_the_fix():
  with pytest.raises(cg.CrossgradError) as info:
    _op(gradient="surrogate")
  message = str(info.value)
  assert "op 't_scale', surrogate:" in message
  assert "expected surrogate=lambda xp, x: ..., got None" in message
  assert "declare gradient='declared'" in message


def test_declared_gradient_and_its_exact_inputs():
  fwd = lambda xp, x, c: (x + c, ())
  bwd = lambda xp, residuals, g: (g, 2 * g)
  op = cg.OpDef("t_declared", fwd, bwd, gradient="declared", exact_inputs=("x",))
  assert op.gradient == "declared" and op.exact_argnums == (0,) and op.surrogate is None


def test_edge_samples_take_the_static_parameters():
  op = _op(edge_samples=lambda *, scale=1.0: (0.5 * scale,),
           special_differences={"daz": "a subnormal x reads as 0"})
  assert op.edge_samples(**op.resolve_params({"scale": 2.0})) == (1.0,)
  assert op.special_differences == {"daz": "a subnormal x reads as 0"}


def test_surrogate_signature_must_match_forward():
  with pytest.raises(cg.CrossgradError, match="'surrogate' has the wrong signature"):
    _op(gradient="surrogate", surrogate=lambda xp, x, y: x)


def test_nondiff_accepts_names_and_indices():
  fwd = lambda xp, x, labels: (x, ())
  bwd = lambda xp, residuals, g: (g, None)
  assert cg.OpDef("t_a", fwd, bwd, nondiff=("labels",)).nondiff_argnums == (1,)
  assert cg.OpDef("t_b", fwd, bwd, nondiff=(1,)).nondiff_argnums == (1,)


def test_static_parameters_are_resolved_and_must_be_hashable():
  op = _op()
  assert op.resolve_params({}) == {"scale": 1.0}
  assert op.resolve_params({"scale": 2.0}) == {"scale": 2.0}
  with pytest.raises(cg.CrossgradError, match="must be hashable"):
    op.resolve_params({"scale": [1.0]})
  with pytest.raises(cg.CrossgradError,
                     match=r"unknown static parameter.*expected one of \['scale'\]"):
    op.resolve_params({"bits": 4}, backend="jax")
