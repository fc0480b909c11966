"""No import circles among the project's modules (the developers' guide: "no import
circles"), read from the source.

Every import counts, a deferred one inside a function too: an import moved into a function
to dodge a circle leaves the circle in the design. Only imports under ``if TYPE_CHECKING:``
are left out (they never run). ``from package import name`` points at the module
``package.name`` when there is one, else at the package."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("model", "webapp", "ocr_worker", "folio_client")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                modules[module_name(path)] = path
    return modules


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if _type_checking_only(node):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def imported(name: str, source: str, modules: dict[str, Path]) -> set[str]:
    """The project's modules that module ``name``, whose text is ``source``, imports."""
    is_package = modules[name].name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in _imports(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t if t in modules else base for t in targets]
        found.update(t for t in targets if t in modules and t != name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported(name, path.read_text(), modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_project_has_no_import_circles():
    assert circles(import_graph()) == []


def test_the_finder_finds_a_circle_and_a_deferred_import_is_still_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]

    modules = project_modules()
    deferred = "def later():\n    from webapp.jobs.services.submission import pages_send\n"
    relative = "from .submission import pages_send\n"
    checked = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import submission\n"
    lifecycle = "webapp.jobs.services.page_lifecycle"
    assert imported(lifecycle, deferred, modules) == {"webapp.jobs.services.submission"}
    assert imported(lifecycle, relative, modules) == {"webapp.jobs.services.submission"}
    assert imported(lifecycle, checked, modules) == set()
