"""Imports run one way: views, admin, commands and the consumer -> tasks -> worker -> services ->
the core (models, frames, event log, audit) -> the engine. Checked on the real import graph (grimp,
the library under import-linter), function-level imports included, type-checking ones not."""

from __future__ import annotations

import grimp
import pytest

# Each layer may import the layers below it, never one above. Entry points sit on top, side by side.
LAYERS = [
    ("chatapp.views", "chatapp.admin", "chatapp.management", "chatapp.consumers", "chatapp.templatetags"),
    ("chatapp.tasks",),
    ("chatapp.worker",),
    ("chatapp.services",),
]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("chatapp", "agent", "demo", exclude_type_checking_imports=True)


def _component(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "chatapp" else parts[0]


def _upward(graph, lower: str, higher: str) -> list[str]:
    found = []
    for importer in {m for m in graph.modules if m == lower or m.startswith(lower + ".")}:
        for imported in graph.find_modules_directly_imported_by(importer):
            if imported == higher or imported.startswith(higher + "."):
                found.append(f"{importer} -> {imported}")
    return found


def test_no_layer_imports_one_above_it(graph):
    offenders = []
    for i, layer in enumerate(LAYERS):
        for higher_layer in LAYERS[:i]:
            for lower in layer:
                for higher in higher_layer:
                    offenders += _upward(graph, lower, higher)
    assert offenders == []


def test_the_engine_and_the_demo_never_import_the_host(graph):
    assert _upward(graph, "agent", "chatapp") + _upward(graph, "agent", "demo") == []
    assert _upward(graph, "demo", "chatapp") == []


def test_there_is_no_import_circle_between_the_parts_of_chatapp(graph):
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = _component(module), _component(imported)
            if a != b:
                edges.setdefault(a, set()).add(b)
    assert _cycles(edges) == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(edges):
        if node not in index:
            visit(node)
    return found


def test_the_circle_check_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
