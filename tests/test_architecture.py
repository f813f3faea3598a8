"""The package's shape, as CONTRIBUTING.md states it: short modules and functions, no cycles, no private reads.

The layers themselves are an import-linter contract in pyproject.toml (``lint-imports``, run by
``scripts/check``); this file checks what that contract cannot: cycles inside one layer, including
imports under ``TYPE_CHECKING`` and inside functions, function length, and underscore names read
across modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "knowtk"
MAX_FUNCTION_LINES = 100
MAX_MODULE_LINES = 800
# Underscore names that belong to another library's protocol, not to a knowtk module.
FOREIGN_PROTOCOL = {"_repr_mimebundle_", "_repr_html_", "_asdict", "_replace", "_fields", "_make", "_exit", "_getframe"}


def modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path, ast.parse(path.read_text(), str(path))


def imported_modules(name: str, path: Path, tree: ast.Module) -> Iterator[str]:
    """Every knowtk module this one imports, wherever the import stands (functions, TYPE_CHECKING)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == "knowtk")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            if base.split(".")[0] != "knowtk":
                continue
            yield base
            for a in node.names:  # `from knowtk.x import y` where y is a module
                yield f"{base}.{a.name}"


def test_no_import_cycles_anywhere() -> None:
    """Tarjan's strongly connected components over knowtk's own import graph (the package's
    ``__init__`` loaded by a submodule import is not an edge: Python's own order, not a dependency)."""
    trees = {name: (path, tree) for name, path, tree in modules()}
    graph = {
        name: {m for m in imported_modules(name, *trees[name]) if m in trees and m != name and m != "knowtk"}
        for name in trees
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == []


def long_functions() -> Iterator[str]:
    for name, _, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    yield f"{name}.{node.name}: {length} lines"


def test_no_function_is_over_100_lines() -> None:
    assert list(long_functions()) == []


def long_modules() -> Iterator[str]:
    for name, path, _ in modules():
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            yield f"{name}: {lines} lines"


def test_no_module_is_over_800_lines() -> None:
    offenders = list(long_modules())
    assert offenders == [], f"modules over {MAX_MODULE_LINES} lines, to split into modules of one job: {offenders}"


def own_private_names(tree: ast.Module) -> set[str]:
    """The underscore names a module defines itself: its functions, classes and attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {n for n in names if n.startswith("_")}


def private_reads() -> Iterator[str]:
    """``from m import _x`` across modules, and ``obj._x`` for a name the module does not define."""
    for name, _, tree in modules():
        own = own_private_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        yield f"{name}: from {node.module} import {a.name}"
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id in {"self", "cls"}:
                    continue
                if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                    continue
                if node.attr in FOREIGN_PROTOCOL or node.attr in own:
                    continue
                yield f"{name}:{node.lineno}: .{node.attr}"


def test_no_module_reads_another_modules_private_names() -> None:
    assert list(private_reads()) == []


@pytest.mark.parametrize(
    "layer", ["model", "scan", "snapshot", "index", "engine", "query", "notebook", "lab", "mcp", "ui", "serve"]
)
def test_every_package_says_what_it_holds(layer: str) -> None:
    init = PACKAGE / layer / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text()))
    assert doc and len(doc) > 40, f"knowtk/{layer}/__init__.py needs a docstring naming its modules' roles"


def _table_keys(tree: ast.Module) -> set[str]:
    """The strings a module uses as keys of a dict literal or of an item assignment (``d["x"] = ...``)."""
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif (
            isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.slice, ast.Constant)
        ):
            keys |= {node.slice.value} if isinstance(node.slice.value, str) else set()
    return keys


def test_a_tool_is_declared_in_one_place() -> None:
    """No built-in tool's name keys a table in more than two package files: everything about a tool is on its
    ``Tool`` (its own module), and the surfaces loop over the registry."""
    from knowtk.query import TOOLS

    names = set(TOOLS.defaults())
    keyed: dict[str, list[str]] = {name: [] for name in names}
    for _, path, tree in modules():
        for name in _table_keys(tree) & names:
            keyed[name].append(str(path.relative_to(PACKAGE)))
    assert {name: files for name, files in keyed.items() if len(files) > 2} == {}


def test_every_built_in_tool_module_declares_a_complete_tool() -> None:
    """Each module of knowtk.query.tools declares one tool, documented for every surface that shows it."""
    from knowtk.query import TOOLS

    tools = TOOLS.defaults()
    declared = sorted(p.stem for p in (PACKAGE / "query" / "tools").glob("*.py") if not p.stem.startswith("_"))
    assert len(declared) == len(tools)
    for tool in tools.values():
        assert tool.summary and tool.agent_description and tool.table is not None, tool.name
        assert tool.columns is not None and tool.output is not None, tool.name
        assert all(p.doc for p in tool.params), tool.name  # the command line's help, the agents guide
        assert tool.writes or tool.example is not None, tool.name


def test_no_hidden_links_between_layers() -> None:
    """No module loads another knowtk module by name (``importlib``) but the plug-in manager, the loaders of
    what plug-ins declared, and the packages' lazy names: a layer's imports are all in sight of lint-imports."""
    allowed = {
        "knowtk",
        "knowtk.plugins",
        "knowtk.query.registry",
        "knowtk.query.tools",
        "knowtk.notebook",
        "knowtk.lab",
    }
    found = []
    for name, _, tree in modules():
        for node in ast.walk(tree):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
            if called and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
                found += [] if name in allowed else [name]
    assert found == []
