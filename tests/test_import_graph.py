"""The import graph of ``shardscan``: no cycle, and no import hidden inside a function to dodge one.

Every module of the package is parsed with ``ast``; every import counts, at module level or
inside a function, except those under ``if TYPE_CHECKING:`` (never run). ``from a.b import c``
counts as an import of ``a.b``, and of ``a.b.c`` when that is a module. See
``docs/architecture.md`` for the direction the layers follow.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "shardscan"

# Modules allowed to import shardscan modules inside functions, and why. Everything else imports
# at module level, where a cycle would show.
LAZY_IMPORTS_ALLOWED: dict[str, str] = {
    "shardscan.cli.scanning": "start-up time: the engine, executor and demo load only for the command that runs them",
    "shardscan.cli.remediation": "start-up time: redaction, review and the rule checker load only for their commands",
    "shardscan.reader.discovery": "start-up time: the remote readers load for URLs only",
    "shardscan.run": "start-up time: the Ray engine's module loads only for --engine ray (tests/cli/test_startup.py)",
}


def module_name(path: Path) -> str:
    """The dotted name of a module file of the package."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """The ids of every node under an ``if TYPE_CHECKING:`` block (imports for annotations only)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return skipped


def _imported(node: ast.Import | ast.ImportFrom, name: str, path: Path) -> set[str]:
    """The package's modules an import statement of module ``name`` (file ``path``) imports."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(anchor + ([base] if base else []))
        targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
    return {t for t in targets if t in MODULES and t != name}


def _function_imports(tree: ast.AST) -> set[int]:
    """The ids of the import statements inside a function body."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(inner) for inner in ast.walk(node) if isinstance(inner, (ast.Import, ast.ImportFrom)))
    return inside


def import_graph() -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """The package's import graph (module → the modules it imports) and, per module, its
    function-level imports of package modules (as ``line: statement``)."""
    graph: dict[str, set[str]] = {}
    lazy: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        skipped = _type_checking_nodes(tree)
        in_functions = _function_imports(tree)
        graph[name] = set()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in skipped:
                continue
            targets = _imported(node, name, path)
            graph[name] |= targets
            if targets and id(node) in in_functions:
                lazy.setdefault(name, []).append(f"{node.lineno}: {ast.unparse(node)}")
    return graph, lazy


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _cycle_path(graph: dict[str, set[str]], component: frozenset[str]) -> str:
    """The shortest cycle through the component's first module, written ``a → b → … → a``."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = deque([start])
    while frontier:
        node = frontier.popleft()
        for child in sorted(graph[node] & component):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return " → ".join([*reversed(path), start])
            if child not in previous:
                previous[child] = node
                frontier.append(child)
    return " ↔ ".join(sorted(component))


def test_the_import_graph_has_no_cycle():
    graph, _ = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_cycle_path(graph, c) for c in found)


def test_no_function_level_import_outside_the_listed_modules():
    _, lazy = import_graph()
    stale = sorted(set(LAZY_IMPORTS_ALLOWED) - set(lazy))
    assert not stale, f"listed as importing inside functions but no longer do (remove them): {stale}"
    unlisted = {name: lines for name, lines in lazy.items() if name not in LAZY_IMPORTS_ALLOWED}
    assert not unlisted, "imports inside functions (move them to the top, or list the module with the reason):\n" + (
        "\n".join(f"{name} {line}" for name, lines in sorted(unlisted.items()) for line in lines)
    )


def test_the_check_finds_a_cycle_and_names_it():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    [component] = cycles(graph)
    assert component == {"a", "b", "c"}
    assert _cycle_path(graph, component) == "a → b → c → a"


def test_the_engine_layers_point_one_way():
    """The stages never import the run layer (executors, cache, api), and the engine never the CLI."""
    graph, _ = import_graph()
    run_layer = {
        "shardscan.api", "shardscan.run", "shardscan.executor", "shardscan.engines.ray_engine", "shardscan.cache",
    }
    below = {"shardscan.engine", "shardscan.filescan", *(m for m in MODULES if m.startswith("shardscan.scanning"))}
    wrong = {(m, t) for m in below for t in graph[m] if t in run_layer or t == "shardscan.cli"}
    assert not wrong, sorted(wrong)


# A module over this many lines holds more than one job (docs/architecture.md, "Module sizes").
MAX_MODULE_LINES = 600


def test_no_module_is_over_the_size_limit():
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by job): {long}"
    assert len(MODULES["shardscan.engine"].read_text().splitlines()) < 250, "engine.py is the facade only"
