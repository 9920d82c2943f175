"""`python -m crossgrad.tf1.coverage`'s cases: ordinary TF functions ported with a legacy
gradient that lets TF build theirs (tf.gradients); the JAX twin must translate them and
agree with TF's own gradient, eagerly and under jax.jit, and never be silently wrong."""

import collections

from crossgrad.tf1 import coverage


def test_tfs_own_gradients_translate_and_agree():
  outcomes = collections.Counter()
  bad = []
  for case in coverage.CASES:
    outcome, reason = coverage.classify(case)
    outcomes[outcome] += 1
    if outcome != "native":
      bad.append(f"{case.category}/{case.name}: {outcome} {reason}")
  assert not outcomes["wrong"] and not outcomes["crashed"], bad
  assert outcomes["native"] >= 0.95 * len(coverage.CASES), bad
  assert len({c.category for c in coverage.CASES}) == 6 and len(coverage.CASES) >= 110


def test_a_wrong_translation_is_caught(monkeypatch):
  from crossgrad.tf1 import handlers  # pylint: disable=g-import-not-at-top
  monkeypatch.setitem(handlers.HANDLERS, "Cos", handlers.HANDLERS["Sin"])
  case = next(c for c in coverage.CASES if c.name == "sin")
  assert coverage.classify(case)[0] == "wrong"


def test_the_legacy_op_types_translate_and_tfs_registry_is_read():
  from crossgrad.tf1 import handlers  # pylint: disable=g-import-not-at-top
  needed = {"Tile", "Cumsum", "SqrtGrad", "RsqrtGrad", "DivNoNan", "IsFinite", "Slice",
            "StridedSliceGrad", "ScatterNd", "TopKV2", "Sin", "Cos", "Sinh", "Cosh", "Softmax",
            "LogSoftmax", "EluGrad", "SeluGrad", "Relu6Grad", "SoftplusGrad", "BiasAddGrad",
            "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPoolGrad", "AvgPoolGrad",
            "BatchMatMulV2", "Einsum", "Pad", "ReverseV2", "Split", "Unpack"}
  assert needed <= set(handlers.HANDLERS)
  found = coverage.registered()
  assert sorted(found) == ["array_grad", "math_grad", "nn_grad"]
  assert {"Sum", "Tile", "Conv2D"} <= {t for types in found.values() for t in types}
