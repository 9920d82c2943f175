"""crossgrad.extend, the one public module of the extension points: a backend added through
it alone is cross-checked (and a wrong VJP in it caught), a row kind and a diagnosis kind
join and leave, and the docs' extension examples import nothing else of crossgrad."""

import contextlib
import pathlib
import re

import numpy as np
import pytest

import crossgrad as cg
from crossgrad import extend

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


class _Toy:
  """NumPy under another name; its VJP is the op core's, times ``factor``."""

  VERSION, MODES = np.__version__, ("eager",)
  xp = cg.numpy.xp

  def __init__(self, name, factor=1.0):
    self.NAME, self.factor = name, factor
    adapter = extend.Adapter(name, self.xp, self.spec_of, as_output=np.asarray,
                             to_arrays=lambda inputs: [np.asarray(x) for x in inputs])
    self.get = extend.make_get(name, extend.emitter(adapter, self._primitive))

  def _primitive(self, core):
    def run(*arrays):
      result = core.forward(arrays)
      specs = result.specs

      def vjp(*upstream):
        cts = core.backward(result.residuals, upstream, specs,
                            lambda i: np.zeros(specs.outputs[i].shape, specs.outputs[i].dtype))
        return tuple(None if c is None else self.factor * c for c in cts)
      return result.outputs, vjp
    return run

  def spec_of(self, x):
    return extend.ArraySpec(np.shape(x), np.asarray(x).dtype.name)

  def devices(self):
    return ["cpu:0"]

  def evaluate(self, op, params, inputs, cotangent, *, device, mode):
    extend.check_run(self.NAME, op, mode, self.MODES, inputs)
    outputs, vjp_fn = self.get(op, **params)(*inputs)
    return outputs if isinstance(outputs, tuple) else (outputs,), vjp_fn(*cotangent)

  def precision_scope(self, arrays, float32=None):
    return contextlib.nullcontext()

  def register_container(self, cls, flatten, unflatten):
    pass


@pytest.mark.parametrize("factor, ok", [(1.0, True), (2.0, False)])
def test_a_backend_added_through_extend_alone_is_checked(factor, ok):
  extend.register_backend(_Toy("t_extend_toy", factor))
  try:
    report = cg.cross_check(["leaky_relu"], backends=["t_extend_toy"], variants="none")
  finally:
    extend.unregister_backend("t_extend_toy")
  assert report.ok is ok
  assert {r.check for r in report.failures} == (set() if ok else {"vjp", "special"})


def test_a_diagnosis_kind_joins_before_the_built_in_ones_and_leaves():
  op = cg.OpDef("t_extend_x2", lambda xp, x: (x, ()), lambda xp, r, g: (2.0 * g,),
                sample=lambda rng: (rng.standard_normal(3),))

  def explain(row, checked):
    assert checked is op
    return extend.Diagnosis("team_rule", "named by the team") if row.check == "fd" else None

  from crossgrad.checker.diagnosis import causes  # pylint: disable=g-import-not-at-top
  report = cg.cross_check([op], backends=[], variants="none")
  extend.register_diagnosis(explain)
  try:
    ours = causes.diagnose(report, [op])
  finally:
    extend.unregister_diagnosis(explain)
  assert {r.diagnosis.kind for r in ours.failures} == {"team_rule"}
  built_in = causes.diagnose(report, [op])  # Gone: the built-in diagnosis again.
  assert {(r.diagnosis.kind, r.diagnosis.factor) for r in built_in.failures} == {("scale", 2.0)}
  with pytest.raises(cg.CrossgradError, match="a diagnosis is a function"):
    extend.register_diagnosis("not a function")


def test_every_public_name_is_listed_and_resolves():
  assert sorted(extend.__all__) == sorted(
      n for n in vars(extend) if not n.startswith("_") and n != "annotations")
  assert all(getattr(extend, n) is not None for n in extend.__all__)


@pytest.mark.parametrize("page, heading", [("backends.md", "## Adding a backend"),
                                           ("cross-check.md", "### Adding a row kind")])
def test_the_docs_extension_examples_use_public_names_only(page, heading):
  text = (DOCS / page).read_text()
  section = text[text.index(heading):]
  block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
  imported = set(re.findall(r"^(?:from|import) (crossgrad\S*)", block, re.M))
  assert imported <= {"crossgrad"} and "from crossgrad import extend" in block, imported
