"""The packages depend on each other in one direction only, read from the code's imports.

Every ``import`` counts, lazy ones inside functions included. ``registry/`` (definitions)
imports no framework, no backend and no checker; ``backends/`` import only ``registry/``;
the checker imports no framework directly (it loads backends by name); no package cycle.
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


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
  packages: dict[str, set[str]] = {}
  frameworks: dict[str, set[str]] = {}
  for path in ROOT.rglob("*.py"):
    parts = path.relative_to(ROOT).parts
    if SKIP & set(parts) or parts[0].startswith("bazel-"):
      continue
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


def test_the_cycle_finder_finds_a_planted_cycle():
  planted = {k: set(v) for k, v in GRAPH.items()}
  planted["registry"] = {"checker"}
  assert _cycle(planted) is not None
