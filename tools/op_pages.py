r"""Writes docs/ops/<op>.md, one page per built-in op, from its definition.

  python tools/op_pages.py              # rewrite the pages
  python tools/op_pages.py --check      # exit 1 if a page differs from its definition

A page holds the op module's docstring (the formulas), its inputs, static parameters and
parameter sets, what the cross-check proves for it, and a snippet (run by the docs test).
"""

import pathlib
import sys

from absl import flags

from crossgrad.cli import usage
from crossgrad.registry import ops as builtin_ops
from crossgrad.registry.opdef import OpDef

_CHECK = flags.DEFINE_bool("check", False, "Only compare the pages with the definitions.")
_OUT = flags.DEFINE_string("out", str(pathlib.Path(__file__).resolve().parent.parent /
                                      "docs" / "ops"), "Folder of the pages.")


def _role(op: OpDef, i: int) -> str:
  if i in op.nondiff_argnums:
    return "non-differentiable (no cotangent)"
  if op.gradient == "exact" or i in op.exact_argnums:
    return "differentiable, exact: finite differences of the forward"
  if op.surrogate is not None:
    return "differentiable, surrogate: finite differences of the declared surrogate"
  return "differentiable, declared: the backward is the specification (no oracle)"


def page(op: OpDef) -> str:
  """The Markdown page of one op."""
  module = sys.modules[op.forward.__module__]
  lines = [f"# `{op.name}`", "", op.doc + ".", "", (module.__doc__ or "").strip(), "",
           "## Inputs", "", "| input | role |", "| --- | --- |"]
  lines += [f"| `{name}` | {_role(op, i)} |" for i, name in enumerate(op.input_names)]
  lines += ["", "## Static parameters", ""]
  if op.param_defaults:
    lines += ["| parameter | default |", "| --- | --- |"]
    lines += [f"| `{k}` | `{v!r}` |" for k, v in op.param_defaults.items()]
  else:
    lines += ["None."]
  sets = ", ".join("`" + (", ".join(f"{k}={v!r}" for k, v in p.items()) or "defaults") + "`"
                   for p in op.param_sets)
  lines += ["", "## What the cross-check covers", "",
            f"Gradient kind `{op.gradient}`. Parameter sets checked: {sets}. For each, the "
            "NumPy reference backward is checked per input as the table above says, then every "
            "backend, dtype, device and mode is compared with the reference (forward values and "
            "the VJP of one random cotangent)."]
  if op.unsupported_modes:
    lines += ["", "Modes the op declares unsupported (reported as `skipped` rows):", ""]
    lines += [f"- `{k}`: {v}" for k, v in op.unsupported_modes.items()]
  lines += ["", "## Try it", "", "```python", "import numpy as np", "", "import crossgrad as cg",
            "", f'inputs = cg.get("{op.name}").sample(np.random.default_rng(0))',
            f'outputs, vjp_fn = cg.numpy.vjp("{op.name}", *inputs)',
            f'assert cg.cross_check(["{op.name}"], backends=["jax"], dtypes=["float64"]).ok',
            "```", ""]
  return "\n".join(lines)


def main(argv):
  del argv
  out = pathlib.Path(_OUT.value)
  stale = []
  for op in sorted(builtin_ops.BUILTIN, key=lambda op: op.name):
    path, text = out / f"{op.name}.md", page(op)
    if _CHECK.value:
      if not path.exists() or path.read_text() != text:
        stale.append(str(path))
    else:
      out.mkdir(parents=True, exist_ok=True)
      path.write_text(text)
  if stale:
    print("out of date (run python tools/op_pages.py): " + ", ".join(stale), file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  usage.run(main)
