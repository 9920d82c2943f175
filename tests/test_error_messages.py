"""Every `CrossgradError` names the op (where one is in scope) and the argument at fault,
read from the code: each ``raise CrossgradError(...)`` site and each ``self._fail(...)`` of
`OpDef`; and no message says "expected None" or doubles a word ("got got")."""

import ast
import pathlib
import pickle
import re

import numpy as np
import pytest

import crossgrad as cg

ROOT = pathlib.Path(__file__).resolve().parent.parent
SKIP = {".venv", "_build", "tools", ".git", "out", "tests"}
OP_NAMES = {"op", "opdef", "op_name"}  # Variables that hold the op a message is about.
# Sites with an op-like variable in scope that has no op to name, and why.
NO_OP = {
    ("registry/op_registry.py", "register takes an OpDef"): "the value is not an OpDef",
    ("registry/opdef.py", "invalid op name"): "the name itself is what is wrong",
    ("checker/main.py", "--jobs above 1 runs shards of its own, not in a Bazel test shard"):
        "a combination of flags, before any op runs",
    ("checker/module_ops.py", "cannot import the module"): "the module, not an op, failed",
}
DOUBLED = re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)


def _sources():
  for path in sorted(ROOT.rglob("*.py")):
    parts = path.relative_to(ROOT).parts
    if not SKIP & set(parts) and not parts[0].startswith("bazel-"):
      yield path


def _called(node):
  func = node.func
  return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _scope(function):
  if function is None:
    return set()
  args = function.args
  names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
  return names | {n.id for n in ast.walk(function)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _sites():
  """(path, line, call, function, class) of every message-making call."""
  found = []
  for path in _sources():
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
      is_raise = (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                  and _called(node.exc) == "CrossgradError")
      is_fail = isinstance(node, ast.Call) and _called(node) == "_fail" and isinstance(
          node.func, ast.Attribute)
      if not (is_raise or is_fail):
        continue
      call = node.exc if is_raise else node
      function = cls = None
      up = node
      while up in parents:
        up = parents[up]
        if function is None and isinstance(up, ast.FunctionDef):
          function = up
        if cls is None and isinstance(up, ast.ClassDef):
          cls = up.name
      found.append((str(path.relative_to(ROOT)), node.lineno, call, function, cls))
  return found


SITES = _sites()


def _strings(node):
  """The literal text parts of an expression (f-string pieces included)."""
  return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
          and isinstance(n.value, str)] if node is not None else []


def test_the_walk_finds_the_sites():
  assert len(SITES) > 80
  assert {path for path, *_ in SITES} >= {"registry/opdef.py", "registry/validation.py",
                                          "checker/selection.py", "tf1/port.py", "sparse/data.py"}


@pytest.mark.parametrize("path, line, call, function, cls", SITES,
                         ids=[f"{s[0]}:{s[1]}" for s in SITES])
def test_site_names_the_op_and_the_argument(path, line, call, function, cls):
  keywords = {k.arg: k.value for k in call.keywords}
  problem = " ".join(_strings(call.args[0])) if call.args else ""
  where = f"{path}:{line}"
  assert "argument" in keywords or None in keywords, f"{where}: no argument= ({problem})"
  has_op = bool(_scope(function) & OP_NAMES) or (cls == "OpDef" and _called(call) != "_fail")
  if has_op and (path, problem) not in NO_OP and not any(
      problem.startswith(p) for (f, p) in NO_OP if f == path):
    assert "op" in keywords or None in keywords, f"{where}: an op is in scope but not named"
  expected = keywords.get("expected")
  assert not (isinstance(expected, ast.Constant) and expected.value in (None, "None")), \
      f"{where}: expected None"
  for key in ("expected", "actual", "hint"):
    for text in _strings(keywords.get(key)):
      assert not DOUBLED.search(text), f"{where}: doubled word in {key}: {text!r}"
  assert not DOUBLED.search(problem), f"{where}: doubled word: {problem!r}"
  assert not re.search(r"\b(got|expected)\s*$", problem), f"{where}: {problem!r}"


def test_wrapped_messages_do_not_repeat_their_word():
  text = str(cg.CrossgradError("bad", argument="x", expected="expected 3", actual="got 4"))
  assert text == "[crossgrad] x: bad: expected 3, got 4"


def test_an_error_crosses_processes_whole():
  """Pickled (as multiprocessing sends it), an error keeps its message and its parts; a
  subclass keeps its class."""
  from crossgrad.distributed import launch  # pylint: disable=g-import-not-at-top
  for error in (cg.CrossgradError("bad", op="o", backend="b", argument="x", expected=3,
                                  actual=4, hint="Fix it."),
                launch.LaunchError("hung", argument="worker 1")):
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.args) == (type(error), str(error), error.args)
    assert vars(copy) == vars(error)


def test_a_wrong_signature_does_not_say_got_got():
  with pytest.raises(cg.CrossgradError) as info:
    cg.OpDef("t_sig", lambda xp, x, *, scale=1.0: (x, ()), lambda xp, r, g: (g,))
  message = str(info.value)
  assert "got an unexpected keyword argument 'scale'" in message
  assert not DOUBLED.search(message), message
  assert "backward(xp, residuals, g, *, scale=...)" in message


def test_a_non_differentiable_cotangent_does_not_say_expected_none():
  op = cg.OpDef("t_nondiff", lambda xp, x, i: (x, ()), lambda xp, r, g: (g, g),
                nondiff=("i",))
  _, vjp_fn = cg.numpy.vjp(op, np.ones(2), np.ones(2))
  with pytest.raises(cg.CrossgradError) as info:
    vjp_fn(np.ones(2))
  message = str(info.value)
  assert "expected None" not in message
  assert message.startswith("[crossgrad] op 't_nondiff' (numpy), cotangent for input 'i': "
                            "non-differentiable input gets no cotangent: got ndarray")


@pytest.mark.parametrize("backend", ["numpy", "tensorflow", "jax", "torch"])
def test_a_forward_that_changes_the_dtype_is_blamed_not_its_backward(backend):
  op = cg.OpDef("t_where_scalars", lambda xp, x: (xp.where(x > 0, 1.0, -1.0), (x,)),
                lambda xp, r, g: (xp.zeros_like(r[0]),), gradient="declared")
  x = np.array([1.0, -2.0], np.float32)
  if backend == "numpy":
    with pytest.raises(cg.CrossgradError) as info:
      cg.numpy.vjp(op, x)
    message = str(info.value)
    assert message.startswith("[crossgrad] op 't_where_scalars' (numpy), forward output 0: "
                              "the forward's output has another dtype than its floating "
                              "inputs: expected float32, got float64[2]")
    assert "cotangent" not in message
  else:  # Their weak scalars (torch: its default dtype) keep float32: nothing to blame.
    module = getattr(cg, backend)
    assert module.spec_of(module.get(op)(x)).dtype == "float32"


def test_the_cross_check_row_blames_the_forward():
  op = cg.OpDef("t_where_scalars_row", lambda xp, x: (xp.where(x > 0, 1.0, -1.0), (x,)),
                lambda xp, r, g: (xp.zeros_like(r[0]),), gradient="declared",
                sample=lambda rng: (rng.standard_normal(3),))
  report = cg.cross_check([op], backends=["jax"], dtypes=["float32"], modes=["eager"])
  (row,) = [r for r in report.rows if r.check == "reference"]
  assert "forward output 0" in row.note and "cotangent" not in row.note
