"""The packages depend on each other in one direction only, read from the code's imports.

Every ``import`` counts, lazy ones inside functions included. ``registry/`` (definitions)
imports no framework, no backend and no checker; ``backends/`` import only ``registry/``;
the checker imports no framework directly (it loads backends by name); no package cycle,
and no cycle between files either (lazy imports included, so none hides one).
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FRAMEWORKS = {"tensorflow", "jax", "jaxlib", "torch", "keras", "chex"}
SKIP = {".venv", "_build", "tools", ".git", "out", "tests", "examples", "benchmarks"}


def _package(path: pathlib.Path) -> str:
  """A file's node in the package graph: its top folder, or its module name at the root."""
  parts = path.relative_to(ROOT).parts
  if len(parts) > 1:
    return parts[0]
  return "crossgrad" if parts[0] == "__init__.py" else parts[0][:-3]


def _imports(path: pathlib.Path) -> set[str]:
  """Absolute module names imported anywhere in the file."""
  found = set()
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import):
      found.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      found.update(f"{node.module}.{alias.name}" for alias in node.names)
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
  assert {"registry", "backends", "checker", "api", "sparse", "bernoulli"} <= set(GRAPH)
  assert "registry" in GRAPH["backends"] and "backends" in GRAPH["checker"]


@pytest.mark.parametrize("package, allowed", [
    ("registry", set()),
    ("backends", {"registry"}),
    ("checker", {"registry", "backends"}),
    ("distributed", {"registry"}),
    # The porting tool writes ops through the public API and the checker, as tf1/ does;
    # its TF table reads TF op types' meaning from tf1.op_xp, as the TF1 twin does.
    ("port", {"registry", "checker", "crossgrad", "tf1"}),
])
def test_allowed_directions(package, allowed):
  assert GRAPH[package] <= allowed, f"{package} imports {sorted(GRAPH[package] - allowed)}"


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
  assert _cycle(GRAPH) is None, " -> ".join(_cycle(GRAPH))


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
  assert "crossgrad.backends.base" in FILE_GRAPH["crossgrad.backends.jax"]


def test_no_cycle_between_files():
  assert _cycle(FILE_GRAPH) is None, " -> ".join(_cycle(FILE_GRAPH))


def test_the_cycle_finder_finds_a_planted_cycle():
  planted = {k: set(v) for k, v in GRAPH.items()}
  planted["registry"] = {"checker"}
  assert _cycle(planted) is not None
  files = {k: set(v) for k, v in FILE_GRAPH.items()}
  files["crossgrad.registry.errors"] = {"crossgrad.sparse.data"}  # data imports errors.
  assert {"crossgrad.registry.errors", "crossgrad.sparse.data"} <= set(_cycle(files) or ())
