"""The import graph of scanner/ has no cycle, and its packages are layered top-down.

A module may import from its own package's layer or any layer below, never above. Every import
counts: at module level, inside a function, and under `if TYPE_CHECKING:` (an annotation that
needs a module above is the same dependency, only postponed).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "scanner"

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"cli", "action"}),
    frozenset({"pipeline"}),
    frozenset({"settings"}),
    frozenset({"render", "report"}),
    frozenset({"compare"}),
    frozenset({"evaluation"}),
    frozenset({"scan"}),
    frozenset({"metrics"}),
    frozenset({"retrievers"}),
    frozenset({"search"}),
    frozenset({"git"}),
    frozenset({"corpus", "golden", "github"}),
    frozenset({"foundation"}),
)
"""The packages of scanner/, top to bottom, as docs/architecture.md draws them."""


def layer(module: str) -> int:
    """The index of the module's package in LAYERS (0 = the interface)."""
    parts = module.split(".")
    if len(parts) == 1:
        return len(LAYERS)  # scanner/__init__.py: the version, below everything
    for index, packages in enumerate(LAYERS):
        if parts[1] in packages:
            return index
    raise AssertionError(f"{module}: its package is in no layer; add it to LAYERS and docs/architecture.md")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    known = {module_name(p) for p in PACKAGE.rglob("*.py")}
    # A module's own parent packages are imported before it whatever it says, so an edge to one
    # (`from scanner.cli import init` inside scanner.cli.main) is no dependency of its own.
    parents = {".".join(module.split(".")[:depth]) for depth in range(1, module.count(".") + 1)}
    imported = imports_of_source(path.read_text(encoding="utf-8"), package)
    return {name for name in imported if name in known and name != module and name not in parents}


def imports_of_source(source: str, package: str) -> set[str]:
    """Every scanner module or name a source imports, wherever the import statement stands."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.startswith("scanner"))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    target = f"{base}.{node.module}" if node.module else base
                else:
                    target = node.module or ""
                if target.startswith("scanner"):
                    found.add(target)
                    # `from . import phrases` imports a module, not a name.
                    found.update(f"{target}.{a.name}" for a in node.names if (PACKAGE.parent / f"{target}.{a.name}".replace(".", "/")).with_suffix(".py").exists())
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    visit([child])

    visit(ast.parse(source).body)
    return found


GRAPH = {module_name(path): imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def test_the_graph_is_read_at_all() -> None:
    # Guards the tests below against passing on an empty graph.
    assert "scanner.render.markdown" in GRAPH["scanner.action.mode"]
    assert "scanner.scan.quotes" in GRAPH["scanner.pipeline.evaluate"]


def test_the_import_graph_has_no_cycle() -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH.get(module, ())):
            if state.get(target) == 1:
                pytest.fail("import cycle: " + " -> ".join(stack[stack.index(target):] + [target]))
            if target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_a_module_imports_only_from_its_layer_or_below(module: str) -> None:
    upward = sorted(target for target in GRAPH[module] if layer(target) < layer(module))
    assert upward == [], f"{module} (layer {layer(module)}) imports from a layer above: {upward}"


def test_every_package_has_a_layer() -> None:
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    layered = set().union(*LAYERS)
    assert packages - layered == set(), "add these packages to LAYERS and docs/architecture.md"
    assert layered - packages == set(), "LAYERS names packages that no longer exist"


def test_an_import_under_type_checking_counts(tmp_path: Path) -> None:
    # The near miss of the layer test: an annotation-only import of a higher package is still upward.
    source = tmp_path / "mod.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from scanner.cli.main import main\n")
    assert "scanner.cli.main" in imports_of_source(source.read_text(), "scanner.foundation")
