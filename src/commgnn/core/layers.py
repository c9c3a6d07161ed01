"""The package's layers, and the import graph that must respect them.

A module imports only modules of its own layer or below; modules of one layer import each
other without a circle. :func:`import_graph` reads every import of ``src/commgnn``
(function-level and ``TYPE_CHECKING`` imports included) from the source, so a deferred
import counts like any other; ``tests/core/test_layers.py`` holds the package to it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

#: Lowest first: each entry names the packages or modules of one layer. A name's longest
#: listed prefix decides its layer.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("commgnn.core",)),
    ("data", ("commgnn.data", "commgnn.partition")),
    ("substrate", ("commgnn.sampling", "commgnn.models", "commgnn.network",
                   "commgnn.energy", "commgnn.cluster")),
    ("runtime", ("commgnn.runtime",)),
    ("train", ("commgnn.train",)),
    ("report", ("commgnn.report",)),
    ("systems", ("commgnn.systems",)),
    ("application", ("commgnn", "commgnn.systems.registry", "commgnn.catalog",
                     "commgnn.experiments", "commgnn.checks", "commgnn.slurm_fit",
                     "commgnn.ledger", "commgnn.figure_index", "commgnn.cli",
                     "commgnn.__main__")),
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer (its longest listed prefix)."""
    best, depth = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and \
                    prefix.count(".") > depth:
                best, depth = index, prefix.count(".")
    if best < 0:
        raise ValueError(f"{module}: in no layer of commgnn.core.layers.LAYERS")
    return best


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node: ast.AST, package: str) -> Iterable[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[:len(package.split(".")) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        yield module
        yield from (f"{module}.{alias.name}" for alias in node.names)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module → the ``commgnn`` modules it imports (every import statement in its source,
    resolved to the longest existing module name)."""
    files = {module_name(path, root): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = list(_imported(node, package))
            if isinstance(node, ast.ImportFrom) and any(n in files for n in names[1:]):
                names = names[1:]  # `from package import module`: the module, not the package
            for name in names:
                while name and name not in files:
                    name = name.rpartition(".")[0]
                if name and name != module and name.startswith("commgnn"):
                    targets.add(name)
        graph[module] = targets
    return graph


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """``(importer, imported)`` pairs where a module imports from a higher layer."""
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if layer_of(b) > layer_of(a))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles among modules (strongly connected components of two or more)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative Tarjan
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def uncommented_deferred_imports(root: Path) -> list[str]:
    """``module:line`` of every import inside a function with no comment saying why (on
    its last line or the line above it): a deferred import is for a heavy dependency only,
    and says so."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text().splitlines()
        for function in ast.walk(ast.parse("\n".join(lines), str(path))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and \
                        "#" not in lines[node.end_lineno - 1] and \
                        not lines[node.lineno - 2].strip().startswith("#"):
                    found.append(f"{module_name(path, root)}:{node.lineno}")
    return sorted(set(found))
