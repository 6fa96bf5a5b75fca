"""The roles app's imports point one way (STYLE.md): no cycles, never the sessions app.

Imports are read from the source (module level and inside functions alike), so an
import hidden in a function body to dodge a cycle still counts.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROLES = Path(__file__).resolve().parents[2] / "roles"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROLES.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: resolve against the importing module's package
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    # ``from roles import receivers`` imports the module roles.receivers.
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def _import_graph() -> dict[str, set[str]]:
    """Every module under roles/ (migrations aside) and everything it imports anywhere."""
    graph: dict[str, set[str]] = {}
    for path in sorted(ROLES.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[module] = {
            name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for name in _imported(node, module, path.name == "__init__.py")
        }
    return graph


def _roles_edges() -> dict[str, set[str]]:
    graph = _import_graph()
    return {
        module: {n for n in names if n in graph and n != module} for module, names in graph.items()
    }


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of modules, or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for imported in sorted(edges[module]):
            found = visit(imported, [*path, module])
            if found:
                return found
        done.add(module)
        return None

    for module in sorted(edges):
        found = visit(module, [])
        if found:
            return found
    return None


def test_the_graph_sees_imports_inside_functions() -> None:
    edges = _roles_edges()
    assert "roles.receivers" in edges["roles.apps"]  # imported inside ready()
    assert "roles.services" in edges["roles.portability.definitions"]


def test_roles_modules_import_each_other_without_cycles() -> None:
    assert _cycle(_roles_edges()) is None


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_roles_never_imports_the_sessions_app() -> None:
    offenders = {
        module: sorted(n for n in names if n == "sessions_app" or n.startswith("sessions_app."))
        for module, names in _import_graph().items()
    }
    assert {m: names for m, names in offenders.items() if names} == {}


def test_leaf_modules_stay_leaves() -> None:
    edges = _roles_edges()
    assert edges["roles.signals"] == set()
    assert edges["roles.commands"] == set()
    assert edges["roles.access"] <= {"roles.commands"}
    assert edges["roles.validation"] <= {"roles.models", "roles.access", "roles.commands"}
    assert edges["roles.registry"] <= {"roles.models", "roles.access"}


def test_services_never_import_the_importer_or_the_edges() -> None:
    edges = _roles_edges()
    assert not {
        m
        for m in edges["roles.services"]
        if m.startswith(("roles.portability", "roles.admin", "roles.apis", "roles.receivers"))
    }
