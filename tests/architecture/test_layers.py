"""The import graph of scanner/ has no cycle, and its layers read top-down.

interface (cli, action) -> pipeline (pipeline, evaluate) -> render -> domain rules and io.
A module may import from its own layer or any layer below, never above. Imports inside
`if TYPE_CHECKING:` are annotations only and do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "scanner"

INTERFACE = {"scanner.cli", "scanner.action", "scanner.init"}
PIPELINE = {"scanner.pipeline", "scanner.evaluate", "scanner.git_base"}
"""git_base evaluates a git revision beside this run (issue 17): it runs the pipeline's evaluation."""


def layer(module: str) -> int:
    """0 = interface, 1 = pipeline, 2 = render, 3 = domain rules and io."""
    if module in INTERFACE:
        return 0
    if module in PIPELINE:
        return 1
    if module.startswith("scanner.render"):
        return 2
    return 3


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports_of(path: Path) -> set[str]:
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node):
                visit(node.orelse)
                continue
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

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    known = {module_name(p) for p in PACKAGE.rglob("*.py")}
    return {name for name in found if name in known and name != module}


GRAPH = {module_name(path): imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def test_the_graph_is_read_at_all() -> None:
    # Guards the tests below against passing on an empty graph.
    assert "scanner.render.markdown" in GRAPH["scanner.action"]
    assert "scanner.quotes" in GRAPH["scanner.evaluate"]


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
