"""The packages depend on each other in one direction only, read from the code's imports.

Every ``import`` counts, lazy ones inside functions included, and so do imports by name: a
string that is a crossgrad module's dotted name (``importlib.import_module("crossgrad.x")``,
``[sys.executable, "-m", "crossgrad.x"]``) and an ``import_module(f"crossgrad.x.{name}")``.
Every package says which packages it may import (`ALLOWED`). ``registry/`` (definitions)
imports no framework, no backend and no checker; ``backends/`` import only ``registry/``;
the checker imports no framework directly (it loads backends by name); no package cycle,
and no cycle between files either (lazy imports included, so none hides one).
"""

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FRAMEWORKS = {"tensorflow", "jax", "jaxlib", "torch", "keras", "chex"}
SKIP = {".venv", "_build", "tools", ".git", "out", "tests"}
_DOTTED = re.compile(r"crossgrad(\.\w+)+")


def _package(path: pathlib.Path) -> str:
  """A file's node in the package graph: its top folder, or its module name at the root."""
  parts = path.relative_to(ROOT).parts
  if len(parts) > 1:
    return parts[0]
  return "crossgrad" if parts[0] == "__init__.py" else parts[0][:-3]


def _is_module(name: str) -> bool:
  path = ROOT.joinpath(*name.split(".")[1:])
  return path.is_dir() or path.with_suffix(".py").is_file()


def _by_name(node: ast.AST) -> str | None:
  """The crossgrad module a string names, or the package an ``import_module`` f-string
  starts with (``f"crossgrad.api.{name}"``: ``crossgrad.api``)."""
  if isinstance(node, ast.Constant) and isinstance(node.value, str):
    return node.value if _DOTTED.fullmatch(node.value) and _is_module(node.value) else None
  if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.JoinedStr)
      and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
    head = node.args[0].values[0]
    if isinstance(head, ast.Constant) and _DOTTED.fullmatch(head.value.rstrip(".")):
      return head.value.rstrip(".")
  return None


def _imports(path: pathlib.Path) -> set[str]:
  """Absolute module names imported anywhere in the file, by statement or by name."""
  found = set()
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import):
      found.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      found.update(f"{node.module}.{alias.name}" for alias in node.names)
    elif (name := _by_name(node)) is not None:
      found.add(name)
  return found


def _target(module: str) -> str | None:
  """The package node ``module`` belongs to, or None outside crossgrad."""
  parts = module.split(".")
  if parts[0] != "crossgrad":
    return None
  if len(parts) == 1:
    return "crossgrad"
  head = parts[1]
  if (ROOT / head).is_dir() or (ROOT / f"{head}.py").exists():
    return head
  return "crossgrad"  # An attribute of the package itself (crossgrad.numpy, ...).


def _library_files() -> list[pathlib.Path]:
  return [path for path in ROOT.rglob("*.py")
          if not SKIP & set(path.relative_to(ROOT).parts)
          and not path.relative_to(ROOT).parts[0].startswith("bazel-")]


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
  packages: dict[str, set[str]] = {}
  frameworks: dict[str, set[str]] = {}
  for path in _library_files():
    node = _package(path)
    imports = _imports(path)
    packages.setdefault(node, set()).update(
        t for t in map(_target, imports) if t not in (None, node))
    frameworks.setdefault(node, set()).update(
        m.split(".")[0] for m in imports if m.split(".")[0] in FRAMEWORKS)
  return packages, frameworks


GRAPH, FRAMEWORK_IMPORTS = _graph()


def test_the_graph_was_read():
  assert {"registry", "backends", "checker", "api", "sparse", "bernoulli", "examples",
          "benchmarks"} <= set(GRAPH)
  assert "registry" in GRAPH["backends"] and "backends" in GRAPH["checker"]


def test_imports_by_name_count(tmp_path):
  module = tmp_path / "m.py"
  module.write_text("import importlib, subprocess, sys\n"
                    "subprocess.run([sys.executable, '-m', 'crossgrad.checker.main'])\n"
                    "importlib.import_module(f'crossgrad.api.{sys.argv[1]}')\n"
                    "print('crossgrad.no_such_module', 'see crossgrad.api for more')\n")
  assert _imports(module) == {"importlib", "subprocess", "sys", "crossgrad.checker.main",
                              "crossgrad.api"}


# What each package may import. The examples and benchmarks sit on top; the package root
# (`__init__.py`) imports the layers users reach through it.
ALLOWED = {
    "registry": set(),
    "cli": {"registry"},
    "backends": {"registry"},
    "checker": {"registry", "backends", "cli"},
    "distributed": {"registry"},
    "sparse": {"registry", "backends"},
    "bernoulli": {"registry", "backends"},
    "api": {"registry", "backends", "checker", "sparse", "bernoulli"},
    "layers": {"registry", "api", "sparse"},
    "crossgrad": {"registry", "backends", "checker", "sparse", "api", "layers", "port"},
    "check": {"checker"},
    "extend": {"registry", "backends", "checker"},
    "__main__": {"cli"},
    "tf1": {"registry", "backends", "checker", "cli", "api"},
    # The porting tool writes registry definitions and proves them with the checker.
    "port": {"registry", "checker", "cli", "tf1"},
    "testing": {"registry", "checker"},
    "examples": {"registry", "backends", "checker", "cli", "sparse", "bernoulli", "api",
                 "layers", "crossgrad", "distributed", "tf1"},
    "benchmarks": {"registry", "backends", "checker", "cli", "sparse", "bernoulli", "api",
                   "layers", "crossgrad", "distributed", "tf1", "examples", "check", "port",
                   "testing"},
}
# Known: the checker's Keras rows start `crossgrad.api.keras_worker`, a process running the
# layer above (tests/test_layering.py counts the name; docs/architecture.md).
STARTED = {"checker": {"api"}}


def test_every_package_says_what_it_may_import():
  assert set(GRAPH) <= set(ALLOWED), f"add to ALLOWED: {sorted(set(GRAPH) - set(ALLOWED))}"


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_allowed_directions(package):
  imported = GRAPH.get(package, set())
  allowed = ALLOWED[package] | STARTED.get(package, set())
  assert imported <= allowed, f"{package} imports {sorted(imported - allowed)}"


@pytest.mark.parametrize("package", ["registry", "checker"])
def test_no_framework_imports(package):
  assert not FRAMEWORK_IMPORTS[package], FRAMEWORK_IMPORTS[package]


def test_backends_name_no_op_family():
  families = {"sparse", "bernoulli", "layers", "api"}
  assert not GRAPH["backends"] & families


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
  state: dict[str, int] = {}
  stack: list[str] = []

  def visit(node):
    state[node] = 1
    stack.append(node)
    for nxt in sorted(graph.get(node, ())):
      if state.get(nxt) == 1:
        return stack[stack.index(nxt):] + [nxt]
      if nxt not in state and (found := visit(nxt)):
        return found
    state[node] = 2
    stack.pop()
    return None

  for node in sorted(graph):
    if node not in state and (found := visit(node)):
      return found
  return None


def test_no_cycle_between_packages():
  started = {package: GRAPH[package] - STARTED.get(package, set()) for package in GRAPH}
  assert _cycle(started) is None, " -> ".join(_cycle(started))


def _module(path: pathlib.Path) -> str:
  """A file's dotted module name (``crossgrad.sparse.data``; a package's is its folder's)."""
  parts = path.relative_to(ROOT).with_suffix("").parts
  return ".".join(("crossgrad",) + (parts[:-1] if parts[-1] == "__init__" else parts))


def _file_graph() -> dict[str, set[str]]:
  """Module -> the crossgrad modules it imports (``from m import name`` counts as m)."""
  files = {_module(path): path for path in _library_files()}

  def resolve(name: str) -> str | None:
    while name and name not in files:
      name = name.rpartition(".")[0]
    return name or None

  return {module: {resolve(name) for name in _imports(path)} - {None, module}
          for module, path in files.items()}


FILE_GRAPH = _file_graph()


def test_the_file_graph_was_read():
  assert "crossgrad.registry.errors" in FILE_GRAPH["crossgrad.sparse.data"]
  assert "crossgrad.backends.common.base" in FILE_GRAPH["crossgrad.backends.jax.emitter"]


def test_no_cycle_between_files():
  assert _cycle(FILE_GRAPH) is None, " -> ".join(_cycle(FILE_GRAPH))


def test_the_cycle_finder_finds_a_planted_cycle():
  planted = {k: set(v) for k, v in GRAPH.items()}
  planted["registry"] = {"checker"}
  assert _cycle(planted) is not None
  files = {k: set(v) for k, v in FILE_GRAPH.items()}
  files["crossgrad.registry.errors"] = {"crossgrad.sparse.data"}  # data imports errors.
  assert {"crossgrad.registry.errors", "crossgrad.sparse.data"} <= set(_cycle(files) or ())
